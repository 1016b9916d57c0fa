//! Byte sources: anything a GGUF file can be read from by byte range.

use super::{GgufError, Header};
use std::future::{ready, Future};
use std::pin::Pin;

/// Why bytes could not be read from a source.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    // The io error is the message's end, not its `source`: a chain of causes would say it twice.
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
    #[error("read of {len} bytes at offset {offset} runs past the end ({file_len} bytes)")]
    PastEnd {
        offset: u64,
        len: u64,
        file_len: u64,
    },
    #[error("{0}")]
    Other(String),
}

/// Where a read of `len` bytes at `offset` ends, or PastEnd when that is beyond `file_len`: the check
/// every source makes before it reads.
pub fn read_end(offset: u64, len: usize, file_len: u64) -> Result<u64, SourceError> {
    offset
        .checked_add(len as u64)
        .filter(|&end| end <= file_len)
        .ok_or(SourceError::PastEnd {
            offset,
            len: len as u64,
            file_len,
        })
}

/// What a read returns: a future, because in the browser bytes come from `fetch` or a `Blob` and the
/// page must not block while they arrive. Local sources return a future that is already complete.
pub type ReadFuture<'a> = Pin<Box<dyn Future<Output = Result<(), SourceError>> + 'a>>;

/// A random-access byte source: a local file, an HTTP resource read by range requests, a browser Blob.
pub trait ByteSource {
    /// Total length in bytes.
    fn len(&self) -> u64;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `buf` with the bytes at `offset..offset + buf.len()`.
    fn read_at<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ReadFuture<'a>;

    /// A short description for messages (a path or URL).
    fn describe(&self) -> String;

    /// A second handle on the same bytes that the engine may keep after loading, to read rows of a
    /// table it leaves off the GPU (Gemma 4's per-layer embeddings); None where the source cannot
    /// give one (the table then goes to the GPU with the rest).
    fn reopen(&self) -> Option<SharedSource> {
        None
    }
}

/// A source an engine keeps: natively shareable across threads, as engines are.
#[cfg(not(target_arch = "wasm32"))]
pub type SharedSource = Box<dyn ByteSource + Send + Sync>;
#[cfg(target_arch = "wasm32")]
pub type SharedSource = Box<dyn ByteSource>;

/// A local file.
#[cfg(not(target_arch = "wasm32"))]
pub struct FileSource {
    file: std::fs::File,
    len: u64,
    path: String,
}

#[cfg(not(target_arch = "wasm32"))]
impl FileSource {
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<FileSource, SourceError> {
        let path_str = path.as_ref().display().to_string();
        let io = |error| SourceError::Io {
            what: path_str.clone(),
            error,
        };
        let file = std::fs::File::open(path.as_ref()).map_err(io)?;
        let metadata = file.metadata().map_err(io)?;
        // A directory opens on some systems, and fails at the first read.
        if metadata.is_dir() {
            return Err(io(std::io::ErrorKind::IsADirectory.into()));
        }
        let len = metadata.len();
        Ok(FileSource {
            file,
            len,
            path: path_str,
        })
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl FileSource {
    pub fn path(&self) -> &str {
        &self.path
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl ByteSource for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ReadFuture<'a> {
        Box::pin(ready(self.read_now(offset, buf)))
    }

    fn describe(&self) -> String {
        self.path.clone()
    }

    fn reopen(&self) -> Option<SharedSource> {
        FileSource::open(&self.path)
            .ok()
            .map(|f| Box::new(f) as SharedSource)
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl FileSource {
    fn read_now(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        read_end(offset, buf.len(), self.len)?;
        read_exact_at(&self.file, buf, offset).map_err(|error| SourceError::Io {
            what: self.path.clone(),
            error,
        })
    }
}

#[cfg(unix)]
fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.seek_read(&mut buf[done..], offset + done as u64)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => done += n,
        }
    }
    Ok(())
}

/// Bytes already in memory (tests, or a file the caller read itself).
pub struct MemorySource {
    pub bytes: Vec<u8>,
    pub name: String,
}

impl ByteSource for MemorySource {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_at<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ReadFuture<'a> {
        Box::pin(ready(self.read_now(offset, buf)))
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}

impl MemorySource {
    fn read_now(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        let end = read_end(offset, buf.len(), self.len())?;
        buf.copy_from_slice(&self.bytes[offset as usize..end as usize]);
        Ok(())
    }
}

/// Headers are read in growing prefixes, starting here: most fit, vocabularies included.
const FIRST_READ: u64 = 4 << 20;

/// Reads and parses the header, touching only the bytes it needs.
pub async fn read_header(source: &dyn ByteSource) -> Result<Header, GgufError> {
    let file_len = source.len();
    let mut want = FIRST_READ.min(file_len);
    loop {
        let mut prefix = vec![0u8; want as usize];
        source.read_at(0, &mut prefix).await?;
        match Header::parse(&prefix, file_len) {
            Err(GgufError::NeedMore { needed, .. }) => want = needed.max(want * 2).min(file_len),
            other => return other,
        }
    }
}

//! A model file on an HTTP(S) server, read by range requests: `wick run -m https://…/model.gguf`.
//! Nothing is downloaded whole: the header's bytes first, then each tensor's, in CHUNK-sized ranges
//! with the next few fetched in the background while the GPU takes the current one.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use wick::gguf::{read_end, ByteSource, ReadFuture, SourceError};

/// Bytes per range request.
const CHUNK: u64 = 8 << 20;
/// Range requests kept in flight ahead of the reader.
const AHEAD: u64 = 3;

enum Slot {
    Pending(JoinHandle<Result<Arc<Vec<u8>>, String>>),
    Ready(Arc<Vec<u8>>),
}

pub struct HttpSource {
    agent: ureq::Agent,
    url: String,
    len: u64,
    /// The file's ETag (else Last-Modified) when first asked: a file that changes mid-load is an error.
    validator: Option<String>,
    chunks: Mutex<HashMap<u64, Slot>>,
}

pub fn is_url(model: &str) -> bool {
    model.starts_with("http://") || model.starts_with("https://")
}

impl HttpSource {
    /// Asks for the first byte, to learn the size and that the server answers range requests.
    pub fn open(url: &str) -> Result<HttpSource, SourceError> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let probe = range_request(&agent, url, 0, 0, None)?;
        Ok(HttpSource {
            agent,
            url: url.to_string(),
            len: probe.total,
            validator: probe.validator,
            chunks: Mutex::new(HashMap::new()),
        })
    }

    fn chunk_range(&self, index: u64) -> (u64, u64) {
        let start = index * CHUNK;
        (start, (start + CHUNK).min(self.len) - 1)
    }

    /// Starts fetching a chunk on its own thread unless it is already here or on its way.
    fn prefetch(&self, chunks: &mut HashMap<u64, Slot>, index: u64) {
        if chunks.contains_key(&index) {
            return;
        }
        let (start, end) = self.chunk_range(index);
        let (agent, url, validator) =
            (self.agent.clone(), self.url.clone(), self.validator.clone());
        let fetch = move || {
            let mut answer = range_request(&agent, &url, start, end, validator.as_deref())
                .map_err(|e| e.to_string())?;
            let mut bytes = vec![0u8; (end - start + 1) as usize];
            answer.body.read_exact(&mut bytes).map_err(|e| {
                format!("{url}: the connection broke while reading bytes {start}-{end}: {e}")
            })?;
            Ok(Arc::new(bytes))
        };
        chunks.insert(index, Slot::Pending(std::thread::spawn(fetch)));
    }

    fn chunk(&self, index: u64) -> Result<Arc<Vec<u8>>, SourceError> {
        let mut chunks = self.chunks.lock().expect("the chunk table");
        self.prefetch(&mut chunks, index);
        let bytes = match chunks.remove(&index).expect("just inserted") {
            Slot::Ready(bytes) => bytes,
            Slot::Pending(fetch) => {
                // The lock is held while waiting: reads are sequential, prefetches don't need it.
                let result = fetch
                    .join()
                    .map_err(|_| other("a download thread panicked"))?;
                result.map_err(SourceError::Other)?
            }
        };
        chunks.insert(index, Slot::Ready(bytes.clone()));
        Ok(bytes)
    }

    fn read_now(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        let end = read_end(offset, buf.len(), self.len)?;
        if buf.is_empty() {
            return Ok(());
        }
        let (first, last) = (offset / CHUNK, (end - 1) / CHUNK);
        {
            let mut chunks = self.chunks.lock().expect("the chunk table");
            // Forget what is behind the reader; look ahead of it.
            chunks.retain(|&i, _| i + 1 >= first);
            let count = self.len.div_ceil(CHUNK);
            for i in last + 1..(last + 1 + AHEAD).min(count) {
                self.prefetch(&mut chunks, i);
            }
        }
        for index in first..=last {
            let bytes = self.chunk(index)?;
            let chunk_start = index * CHUNK;
            let from = offset.max(chunk_start);
            let to = end.min(chunk_start + bytes.len() as u64);
            buf[(from - offset) as usize..(to - offset) as usize].copy_from_slice(
                &bytes[(from - chunk_start) as usize..(to - chunk_start) as usize],
            );
        }
        Ok(())
    }
}

impl ByteSource for HttpSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ReadFuture<'a> {
        Box::pin(std::future::ready(self.read_now(offset, buf)))
    }

    fn describe(&self) -> String {
        self.url.clone()
    }
}

fn other(message: impl Into<String>) -> SourceError {
    SourceError::Other(message.into())
}

struct RangeAnswer {
    total: u64,
    validator: Option<String>,
    body: Box<dyn Read + Send>,
}

/// A 206 answer for bytes start..=end, or an error that says what the server did instead.
fn range_request(
    agent: &ureq::Agent,
    url: &str,
    start: u64,
    end: u64,
    expect_validator: Option<&str>,
) -> Result<RangeAnswer, SourceError> {
    let response = agent
        .get(url)
        .header("Range", format!("bytes={start}-{end}"))
        .call()
        .map_err(|e| other(format!("cannot fetch {url}: {e}")))?;
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    match status {
        206 => {}
        200 => {
            return Err(other(format!(
                "the server of {url} ignores Range requests (it answered with the whole file); \
                 wick reads models by range and needs a server that answers 206 Partial Content"
            )))
        }
        416 => {
            return Err(other(format!(
                "{url}: the file is shorter than its header says (HTTP 416)"
            )))
        }
        _ => return Err(other(format!("cannot fetch {url}: HTTP {status}"))),
    }
    // "bytes START-END/TOTAL"
    let content_range = header("content-range").unwrap_or_default();
    let parsed = content_range
        .strip_prefix("bytes ")
        .and_then(|r| r.split_once('/'))
        .and_then(|(span, total)| {
            let (a, b) = span.split_once('-')?;
            Some((
                a.parse::<u64>().ok()?,
                b.parse::<u64>().ok()?,
                total.parse::<u64>().ok()?,
            ))
        });
    let Some((got_start, got_end, total)) = parsed else {
        return Err(other(format!(
            "{url}: the server answered a range request without a usable Content-Range ({content_range:?})"
        )));
    };
    if (got_start, got_end) != (start, end.min(total.saturating_sub(1))) {
        return Err(other(format!(
            "{url}: asked for bytes {start}-{end}, the server sent {got_start}-{got_end}"
        )));
    }
    let validator = header("etag").or_else(|| header("last-modified"));
    if let Some(expected) = expect_validator {
        if validator.as_deref() != Some(expected) {
            return Err(other(format!(
                "{url} changed on the server while it was being read (its ETag / Last-Modified changed)"
            )));
        }
    }
    Ok(RangeAnswer {
        total,
        validator,
        body: Box::new(response.into_body().into_reader()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    /// How the test server answers.
    #[derive(Clone, Copy)]
    enum Serve {
        Ranges,
        WholeFile,
        NotFound,
    }

    /// A small HTTP/1.1 server over `bytes` on a free port, one thread per connection.
    fn server(bytes: Vec<u8>, serve: Serve) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/model.gguf", listener.local_addr().unwrap());
        let bytes = Arc::new(bytes);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let (mut stream, bytes) = (stream.unwrap(), bytes.clone());
                std::thread::spawn(move || loop {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut range = None;
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        reader.read_line(&mut line).unwrap();
                        if line.trim().is_empty() {
                            break;
                        }
                        if let Some(r) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                            let (a, b) = r.trim().split_once('-').unwrap();
                            range =
                                Some((a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()));
                        }
                    }
                    let head = match (serve, range) {
                        (Serve::NotFound, _) => {
                            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_string()
                        }
                        (Serve::Ranges, Some((a, b))) => {
                            let b = b.min(bytes.len() - 1);
                            let head = format!(
                                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{}\r\nContent-Length: {}\r\nETag: \"x\"\r\n\r\n",
                                bytes.len(),
                                b - a + 1
                            );
                            stream.write_all(head.as_bytes()).unwrap();
                            stream.write_all(&bytes[a..=b]).unwrap();
                            continue;
                        }
                        _ => {
                            let head = format!(
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                                bytes.len()
                            );
                            stream.write_all(head.as_bytes()).unwrap();
                            let _ = stream.write_all(&bytes);
                            continue;
                        }
                    };
                    stream.write_all(head.as_bytes()).unwrap();
                });
            }
        });
        url
    }

    #[test]
    fn reads_any_range_as_the_bytes_of_the_file() {
        // Three chunks and a bit, so reads cross chunk edges and the prefetch runs.
        let bytes: Vec<u8> = (0..3 * CHUNK as usize + 12345)
            .map(|i| (i * 7 + i / 251) as u8)
            .collect();
        let source = HttpSource::open(&server(bytes.clone(), Serve::Ranges)).unwrap();
        assert_eq!(source.len(), bytes.len() as u64);
        let mut seed = 1u64;
        for _ in 0..40 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let offset = (seed >> 33) % bytes.len() as u64;
            let len = ((seed >> 7) % (CHUNK + CHUNK / 2)).min(bytes.len() as u64 - offset);
            let mut buf = vec![0; len as usize];
            source.read_now(offset, &mut buf).unwrap();
            assert!(
                buf == bytes[offset as usize..(offset + len) as usize],
                "{offset}+{len}"
            );
        }
        let mut past = [0u8; 2];
        let err = source
            .read_now(bytes.len() as u64 - 1, &mut past)
            .unwrap_err();
        assert!(matches!(err, SourceError::PastEnd { .. }), "{err}");
    }

    #[test]
    fn servers_that_cannot_serve_ranges_are_named() {
        let whole = HttpSource::open(&server(vec![1; 100], Serve::WholeFile))
            .err()
            .unwrap();
        assert!(
            whole.to_string().contains("ignores Range requests"),
            "{whole}"
        );
        let missing = HttpSource::open(&server(vec![1; 100], Serve::NotFound))
            .err()
            .unwrap();
        assert!(missing.to_string().contains("HTTP 404"), "{missing}");
        let refused = HttpSource::open("http://127.0.0.1:1/model.gguf")
            .err()
            .unwrap();
        assert!(refused.to_string().contains("cannot fetch"), "{refused}");
    }
}

//! A GGUF file read through a source that counts the bytes read past its header and fails every read
//! from `fail_from` on, as a connection lost halfway.

use pollster::FutureExt as _;
use std::cell::Cell;
use wick::gguf::{ByteSource, FileSource, Header, ReadFuture, SourceError};

pub struct WatchedSource {
    inner: FileSource,
    data_offset: u64,
    /// Bytes read from the data section (past the header).
    pub data_read: Cell<u64>,
    /// Reads that start here or later fail.
    pub fail_from: u64,
}

impl WatchedSource {
    /// The file at `path`, its header read apart (not counted).
    pub fn open(path: &std::path::Path) -> (WatchedSource, Header) {
        let inner = FileSource::open(path).unwrap();
        let header = wick::gguf::read_header(&inner).block_on().unwrap();
        let source = WatchedSource {
            inner,
            data_offset: header.data_offset,
            data_read: Default::default(),
            fail_from: u64::MAX,
        };
        (source, header)
    }
}

impl ByteSource for WatchedSource {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_at<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ReadFuture<'a> {
        let end = offset + buf.len() as u64;
        if offset >= self.fail_from {
            let lost = SourceError::Other("connection lost".into());
            return Box::pin(std::future::ready(Err(lost)));
        }
        let past_header = end.saturating_sub(offset.max(self.data_offset));
        self.data_read.set(self.data_read.get() + past_header);
        self.inner.read_at(offset, buf)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

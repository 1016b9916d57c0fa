//! GGUF: the header (metadata and tensor table) and the byte sources it is read from.
//!
//! The header is parsed from a prefix of the file; when the prefix is too short the parser says how many
//! bytes it needs and the caller reads more. So reading a header touches only the first bytes of a local
//! file, an HTTP resource or a browser Blob alike, and each tensor is then its own byte range.

mod header;
mod source;
mod types;
pub mod write;

pub use header::{Header, TensorInfo, Value};
#[cfg(not(target_arch = "wasm32"))]
pub use source::FileSource;
pub use source::{
    read_end, read_header, ByteSource, MemorySource, ReadFuture, SharedSource, SourceError,
};
pub use types::GgmlType;

/// Why a GGUF file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("not a GGUF file (the first bytes are {0:02x?}, not \"GGUF\")")]
    BadMagic([u8; 4]),
    #[error("GGUF version {0} is not supported (Wick reads versions 2 and 3)")]
    UnsupportedVersion(u32),
    #[error("the file ends at byte {file_len} but its header needs byte {needed}: the file is truncated or corrupt")]
    Truncated { needed: u64, file_len: u64 },
    /// The prefix handed to the parser was too short; read at least `needed` bytes and parse again.
    #[error("the header continues past the {have} bytes read so far (needs {needed})")]
    NeedMore { needed: u64, have: u64 },
    #[error("{what} {count} is larger than the file could hold")]
    CountTooLarge { what: &'static str, count: u64 },
    #[error("metadata value type {0} is unknown")]
    UnknownValueType(u32),
    #[error("metadata nests arrays deeper than Wick allows")]
    NestingTooDeep,
    #[error("a string in the header is not valid UTF-8")]
    BadString,
    #[error("metadata key {0:?} appears twice")]
    DuplicateKey(String),
    #[error("general.alignment {0} is not a power of two")]
    BadAlignment(u64),
    #[error("tensor {name:?} has type id {id}, which Wick does not support")]
    UnknownTensorType { name: String, id: u32 },
    #[error("tensor {name:?} has a bad shape {dims:?}")]
    BadShape { name: String, dims: Vec<u64> },
    #[error(
        "tensor {name:?} of {ty} has rows of {row} weights, not a whole number of {ty} blocks \
         ({block_len} weights each)"
    )]
    PartialBlock {
        name: String,
        ty: GgmlType,
        row: u64,
        block_len: usize,
    },
    #[error("tensor {name:?} at data offset {offset} is not aligned to {alignment} bytes")]
    Misaligned {
        name: String,
        offset: u64,
        alignment: u64,
    },
    #[error("tensor {name:?} ends at byte {end}, past the end of the file ({file_len} bytes)")]
    TensorPastEnd {
        name: String,
        end: u64,
        file_len: u64,
    },
    #[error("tensor {0:?} appears twice")]
    DuplicateTensor(String),
    #[error("metadata key {key:?}: {problem}")]
    BadMetadata { key: String, problem: String },
    #[error(transparent)]
    Source(#[from] SourceError),
}

//! Writing GGUF v3: the header (metadata and tensor table) first, then each tensor's bytes in table order, so that a
//! model is written as it is produced and never held whole in memory.
//!
//! Layout: "GGUF", version 3, tensor count, metadata count, the key/values, the tensor table (name, dims in ggml
//! order, type id, offset into the data section); zero padding up to `general.alignment` (32 when absent); then
//! the tensors, each starting at an aligned offset and padded with zeros to the alignment.

use super::{GgmlType, Value};
use std::io::Write;

const VERSION: u32 = 3;
const DEFAULT_ALIGNMENT: u64 = 32;

/// A tensor to be written: the writer lays out the offsets.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    /// ggml order: dims[0] is the row length.
    pub dims: Vec<u64>,
    pub ty: GgmlType,
}

/// Why a GGUF file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("metadata key {key:?}: an array holds values of types {first} and {other}; GGUF arrays hold one type")]
    MixedArray { key: String, first: u32, other: u32 },
    #[error("metadata key {0:?} appears twice")]
    DuplicateKey(String),
    #[error("general.alignment {0:?} is not a power of two")]
    BadAlignment(Value),
    #[error("tensor {name:?} has a bad shape {dims:?} (1 to 4 dimensions, none zero)")]
    BadShape { name: String, dims: Vec<u64> },
    #[error("tensor {name:?}: rows of {row_len} weights are not a whole number of {ty} blocks")]
    PartialBlock {
        name: String,
        ty: GgmlType,
        row_len: u64,
    },
    #[error("tensor {0:?} appears twice")]
    DuplicateTensor(String),
    #[error("{0} bytes of tensor data were written past the last tensor")]
    TooMuchData(usize),
    #[error("tensor {name:?} needs {expected} bytes but only {got} were written")]
    MissingData {
        name: String,
        expected: u64,
        got: u64,
    },
}

/// Streams a GGUF file: [`Writer::new`] writes the header, [`Writer::write_data`] the tensors' bytes in table order
/// (in pieces of any size), [`Writer::finish`] checks that every tensor got all its bytes.
pub struct Writer<W: Write> {
    out: W,
    alignment: u64,
    /// (name, bytes) of each tensor, in table order.
    tensors: Vec<(String, u64)>,
    /// The tensor being written, and how many of its bytes are written.
    current: usize,
    done: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(
        mut out: W,
        metadata: &[(String, Value)],
        tensors: &[TensorSpec],
    ) -> Result<Writer<W>, WriteError> {
        let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some((_, v)) => match v.as_u64() {
                Some(a) if a.is_power_of_two() => a,
                _ => return Err(WriteError::BadAlignment(v.clone())),
            },
        };

        let mut h = Vec::new();
        h.extend_from_slice(b"GGUF");
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
        h.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
        // Sets, not scans: a header of a million keys (as a hostile input file can carry) must not cost
        // O(n²) to write back.
        let mut keys = std::collections::HashSet::with_capacity(metadata.len());
        for (key, value) in metadata {
            if !keys.insert(key.as_str()) {
                return Err(WriteError::DuplicateKey(key.clone()));
            }
            put_str(&mut h, key);
            h.extend_from_slice(&value.type_id().to_le_bytes());
            put_value(&mut h, key, value)?;
        }

        let mut sizes = Vec::with_capacity(tensors.len());
        let mut offset = 0u64;
        let mut names = std::collections::HashSet::with_capacity(tensors.len());
        for t in tensors {
            let bytes = tensor_bytes(t)?;
            if !names.insert(t.name.as_str()) {
                return Err(WriteError::DuplicateTensor(t.name.clone()));
            }
            put_str(&mut h, &t.name);
            h.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            for &d in &t.dims {
                h.extend_from_slice(&d.to_le_bytes());
            }
            h.extend_from_slice(&t.ty.id().to_le_bytes());
            h.extend_from_slice(&offset.to_le_bytes());
            offset += bytes.next_multiple_of(alignment);
            sizes.push((t.name.clone(), bytes));
        }
        h.resize((h.len() as u64).next_multiple_of(alignment) as usize, 0);
        out.write_all(&h)?;
        Ok(Writer {
            out,
            alignment,
            tensors: sizes,
            current: 0,
            done: 0,
        })
    }

    /// Writes the next bytes of tensor data; a tensor's padding follows it as soon as its last byte is written.
    pub fn write_data(&mut self, mut bytes: &[u8]) -> Result<(), WriteError> {
        while !bytes.is_empty() {
            let Some(&(_, size)) = self.tensors.get(self.current) else {
                return Err(WriteError::TooMuchData(bytes.len()));
            };
            let take = (size - self.done).min(bytes.len() as u64) as usize;
            self.out.write_all(&bytes[..take])?;
            bytes = &bytes[take..];
            self.done += take as u64;
            if self.done == size {
                let pad = size.next_multiple_of(self.alignment) - size;
                self.out.write_all(&vec![0u8; pad as usize])?;
                self.current += 1;
                self.done = 0;
            }
        }
        Ok(())
    }

    /// Checks that every tensor was written in full, flushes, and hands back the output.
    pub fn finish(mut self) -> Result<W, WriteError> {
        if let Some((name, size)) = self.tensors.get(self.current) {
            return Err(WriteError::MissingData {
                name: name.clone(),
                expected: *size,
                got: self.done,
            });
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

fn tensor_bytes(t: &TensorSpec) -> Result<u64, WriteError> {
    let bad_shape = || WriteError::BadShape {
        name: t.name.clone(),
        dims: t.dims.clone(),
    };
    if t.dims.is_empty() || t.dims.len() > 4 || t.dims.contains(&0) {
        return Err(bad_shape());
    }
    let elements = t
        .dims
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or_else(bad_shape)?;
    match t.ty.bytes_for(elements) {
        Some(bytes) if t.dims[0].is_multiple_of(t.ty.block_len() as u64) => Ok(bytes),
        _ => Err(WriteError::PartialBlock {
            name: t.name.clone(),
            ty: t.ty,
            row_len: t.dims[0],
        }),
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A value's payload (its type id is written by the caller). An array's element type is its first element's;
/// an empty array is written as an array of strings, the type GGUF's empty arrays most often have.
fn put_value(out: &mut Vec<u8>, key: &str, value: &Value) -> Result<(), WriteError> {
    match value {
        Value::U8(v) => out.push(*v),
        Value::I8(v) => out.push(*v as u8),
        Value::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::Bool(v) => out.push(*v as u8),
        Value::String(s) => put_str(out, s),
        Value::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::Array(items) => {
            let elem_ty = items
                .first()
                .map_or(Value::String(String::new()).type_id(), Value::type_id);
            out.extend_from_slice(&elem_ty.to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                if item.type_id() != elem_ty {
                    return Err(WriteError::MixedArray {
                        key: key.to_string(),
                        first: elem_ty,
                        other: item.type_id(),
                    });
                }
                put_value(out, key, item)?;
            }
        }
    }
    Ok(())
}

//! Parsing of the GGUF header: magic, version, metadata key/values and the tensor table.

use super::{GgmlType, GgufError};

const MAGIC: &[u8; 4] = b"GGUF";
const DEFAULT_ALIGNMENT: u64 = 32;
/// ggml tensors have at most four dimensions.
const MAX_DIMS: u32 = 4;
/// Arrays of arrays are legal GGUF; deeper nesting than this is not something a model needs.
const MAX_ARRAY_DEPTH: u32 = 3;

/// A metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(Vec<Value>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    /// Any integer value that fits in a u64.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v as u64),
            Value::U16(v) => Some(v as u64),
            Value::U32(v) => Some(v as u64),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            Value::Bool(v) => Some(v as u64),
            _ => None,
        }
    }

    /// Any integer value that fits in an i64.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::I8(v) => Some(v as i64),
            Value::I16(v) => Some(v as i64),
            Value::I32(v) => Some(v as i64),
            Value::I64(v) => Some(v),
            _ => self.as_u64().and_then(|v| i64::try_from(v).ok()),
        }
    }

    /// Any number, as f64.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v as f64),
            Value::F64(v) => Some(v),
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => self.as_u64().map(|v| v != 0),
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// GGUF's value-type id.
    pub fn type_id(&self) -> u32 {
        match self {
            Value::U8(_) => 0,
            Value::I8(_) => 1,
            Value::U16(_) => 2,
            Value::I16(_) => 3,
            Value::U32(_) => 4,
            Value::I32(_) => 5,
            Value::F32(_) => 6,
            Value::Bool(_) => 7,
            Value::String(_) => 8,
            Value::Array(_) => 9,
            Value::U64(_) => 10,
            Value::I64(_) => 11,
            Value::F64(_) => 12,
        }
    }
}

/// One entry of the tensor table.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// ggml order: dims[0] is the row length (the fastest-varying dimension).
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    /// Offset from the start of the data section.
    pub offset: u64,
}

impl TensorInfo {
    pub fn elements(&self) -> u64 {
        self.dims.iter().product()
    }

    pub fn bytes(&self) -> u64 {
        // Checked at parse time: the element count is a whole number of blocks.
        self.ty.bytes_for(self.elements()).unwrap_or(0)
    }

    /// Row length (weights per row).
    pub fn row_len(&self) -> u64 {
        self.dims[0]
    }

    /// Number of rows: every dimension past the first.
    pub fn rows(&self) -> u64 {
        self.dims[1..].iter().product()
    }
}

/// A parsed GGUF header.
#[derive(Clone, Debug)]
pub struct Header {
    pub version: u32,
    /// Key/values in file order.
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorInfo>,
    /// Absolute file offset of the data section.
    pub data_offset: u64,
    pub alignment: u64,
    pub file_len: u64,
}

impl Header {
    /// Parses a header from `prefix`, the first bytes of a file of `file_len` bytes.
    /// Returns `GgufError::NeedMore` when the prefix ends before the header does.
    pub fn parse(prefix: &[u8], file_len: u64) -> Result<Header, GgufError> {
        let mut r = Reader {
            buf: prefix,
            pos: 0,
            file_len,
        };
        let magic = r.bytes(4)?;
        if magic != MAGIC {
            let mut m = [0u8; 4];
            m.copy_from_slice(magic);
            return Err(GgufError::BadMagic(m));
        }
        let version = r.u32()?;
        if version != 2 && version != 3 {
            return Err(GgufError::UnsupportedVersion(version));
        }
        let n_tensors = r.u64()?;
        let n_kv = r.u64()?;
        // Each key/value takes at least 13 bytes (key length, one byte of key, type, a u8 value)
        // and each tensor at least 29; larger counts cannot be real.
        r.check_count("tensor count", n_tensors, 29)?;
        r.check_count("metadata count", n_kv, 13)?;

        let mut metadata: Vec<(String, Value)> = Vec::with_capacity(n_kv.min(1024) as usize);
        // A set, not a scan of `metadata`: a hostile file of a million tiny keys must not take O(n²).
        let mut keys = std::collections::HashSet::with_capacity(n_kv.min(1024) as usize);
        for _ in 0..n_kv {
            let key = r.string()?;
            let ty = r.u32()?;
            let value = r.value(ty, 0)?;
            if !keys.insert(key.clone()) {
                return Err(GgufError::DuplicateKey(key));
            }
            metadata.push((key, value));
        }

        let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some((_, v)) => {
                let a = v.as_u64().unwrap_or(0);
                if a == 0 || !a.is_power_of_two() {
                    return Err(GgufError::BadAlignment(a));
                }
                a
            }
        };

        let mut tensors = Vec::with_capacity(n_tensors.min(4096) as usize);
        for _ in 0..n_tensors {
            tensors.push(r.tensor_info()?);
        }
        let data_offset = r.pos.div_ceil(alignment) * alignment;
        let data_len = file_len.saturating_sub(data_offset);
        let mut names = std::collections::HashSet::new();
        for t in &tensors {
            if !names.insert(t.name.as_str()) {
                return Err(GgufError::DuplicateTensor(t.name.clone()));
            }
            if t.offset % alignment != 0 {
                return Err(GgufError::Misaligned {
                    name: t.name.clone(),
                    offset: t.offset,
                    alignment,
                });
            }
            let end = t.offset.checked_add(t.bytes()).filter(|&e| e <= data_len);
            if end.is_none() {
                return Err(GgufError::TensorPastEnd {
                    name: t.name.clone(),
                    end: data_offset
                        .saturating_add(t.offset)
                        .saturating_add(t.bytes()),
                    file_len,
                });
            }
        }
        Ok(Header {
            version,
            metadata,
            tensors,
            data_offset,
            alignment,
            file_len,
        })
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    pub fn get_bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(Value::as_bool)
    }

    pub fn get_array(&self, key: &str) -> Option<&[Value]> {
        self.get(key).and_then(Value::as_array)
    }

    /// The model's architecture (`general.architecture`), e.g. "llama".
    pub fn architecture(&self) -> Option<&str> {
        self.get_str("general.architecture")
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// Absolute byte range of a tensor's data in the file.
    pub fn tensor_range(&self, t: &TensorInfo) -> std::ops::Range<u64> {
        let start = self.data_offset + t.offset;
        start..start + t.bytes()
    }
}

/// A cursor over the prefix, which knows the whole file's length to tell "read more" from "truncated".
struct Reader<'a> {
    buf: &'a [u8],
    pos: u64,
    file_len: u64,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: u64) -> Result<&'a [u8], GgufError> {
        let end = self.pos.checked_add(n).ok_or(GgufError::Truncated {
            needed: u64::MAX,
            file_len: self.file_len,
        })?;
        if end > self.file_len {
            return Err(GgufError::Truncated {
                needed: end,
                file_len: self.file_len,
            });
        }
        if end > self.buf.len() as u64 {
            return Err(GgufError::NeedMore {
                needed: end,
                have: self.buf.len() as u64,
            });
        }
        let s = &self.buf[self.pos as usize..end as usize];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], GgufError> {
        Ok(self.bytes(N as u64)?.try_into().expect("slice of N bytes"))
    }

    fn u32(&mut self) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// Refuses a count of items, each at least `min_bytes` long, that the rest of the file cannot hold.
    fn check_count(&self, what: &'static str, count: u64, min_bytes: u64) -> Result<(), GgufError> {
        let left = self.file_len.saturating_sub(self.pos);
        if count.saturating_mul(min_bytes) > left {
            return Err(GgufError::CountTooLarge { what, count });
        }
        Ok(())
    }

    fn string(&mut self) -> Result<String, GgufError> {
        let len = self.u64()?;
        self.check_count("string length", len, 1)?;
        let b = self.bytes(len)?;
        String::from_utf8(b.to_vec()).map_err(|_| GgufError::BadString)
    }

    fn value(&mut self, ty: u32, depth: u32) -> Result<Value, GgufError> {
        Ok(match ty {
            0 => Value::U8(self.array::<1>()?[0]),
            1 => Value::I8(self.array::<1>()?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.array()?)),
            3 => Value::I16(i16::from_le_bytes(self.array()?)),
            4 => Value::U32(self.u32()?),
            5 => Value::I32(i32::from_le_bytes(self.array()?)),
            6 => Value::F32(f32::from_le_bytes(self.array()?)),
            7 => Value::Bool(self.array::<1>()?[0] != 0),
            8 => Value::String(self.string()?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(GgufError::NestingTooDeep);
                }
                let elem_ty = self.u32()?;
                let len = self.u64()?;
                let min = match elem_ty {
                    0 | 1 | 7 => 1,
                    2 | 3 => 2,
                    4..=6 => 4,
                    8..=12 => 8,
                    other => return Err(GgufError::UnknownValueType(other)),
                };
                self.check_count("array length", len, min)?;
                let mut items = Vec::with_capacity(len.min(65536) as usize);
                for _ in 0..len {
                    items.push(self.value(elem_ty, depth + 1)?);
                }
                Value::Array(items)
            }
            10 => Value::U64(self.u64()?),
            11 => Value::I64(i64::from_le_bytes(self.array()?)),
            12 => Value::F64(f64::from_le_bytes(self.array()?)),
            other => return Err(GgufError::UnknownValueType(other)),
        })
    }

    fn tensor_info(&mut self) -> Result<TensorInfo, GgufError> {
        let name = self.string()?;
        let n_dims = self.u32()?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(GgufError::BadShape {
                name,
                dims: vec![n_dims as u64],
            });
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(self.u64()?);
        }
        let elements = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
        let Some(elements) = elements.filter(|&e| e > 0) else {
            return Err(GgufError::BadShape { name, dims });
        };
        let id = self.u32()?;
        let ty = GgmlType::from_id(id).ok_or_else(|| GgufError::UnknownTensorType {
            name: name.clone(),
            id,
        })?;
        // Whole rows of blocks (and so whole blocks in all).
        if dims[0] % ty.block_len() as u64 != 0 {
            return Err(GgufError::PartialBlock {
                name,
                ty,
                row: dims[0],
                block_len: ty.block_len(),
            });
        }
        // A size in bytes that u64 cannot hold.
        if ty.bytes_for(elements).is_none() {
            return Err(GgufError::BadShape { name, dims });
        }
        let offset = self.u64()?;
        Ok(TensorInfo {
            name,
            dims,
            ty,
            offset,
        })
    }
}

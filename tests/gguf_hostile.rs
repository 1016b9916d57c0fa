//! The GGUF reader on hostile input: every bad file gets an error, never a panic, hang or huge allocation.

use wick::gguf::{GgufError, Header};

/// Builds GGUF bytes by hand, independently of the crate's writer.
#[derive(Default)]
struct Bytes(Vec<u8>);

impl Bytes {
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn str(self, s: &str) -> Self {
        let mut b = self.u64(s.len() as u64);
        b.0.extend_from_slice(s.as_bytes());
        b
    }
    fn raw(mut self, r: &[u8]) -> Self {
        self.0.extend_from_slice(r);
        self
    }
    fn start(n_tensors: u64, n_kv: u64) -> Self {
        Bytes::default()
            .raw(b"GGUF")
            .u32(3)
            .u64(n_tensors)
            .u64(n_kv)
    }
    fn kv_u32(self, key: &str, v: u32) -> Self {
        self.str(key).u32(4).u32(v)
    }
    /// A tensor entry: name, dims, type id, offset.
    fn tensor(self, name: &str, dims: &[u64], ty: u32, offset: u64) -> Self {
        let mut b = self.str(name).u32(dims.len() as u32);
        for &d in dims {
            b = b.u64(d);
        }
        b.u32(ty).u64(offset)
    }
    /// Pads to 32 bytes and appends `data` bytes of zeros.
    fn data(mut self, data: usize) -> Self {
        self.0.resize(self.0.len().next_multiple_of(32) + data, 0);
        self
    }
}

fn parse(b: &Bytes) -> Result<Header, GgufError> {
    Header::parse(&b.0, b.0.len() as u64)
}

/// A valid file: one key, two F32 tensors.
fn valid() -> Bytes {
    Bytes::start(2, 1)
        .kv_u32("general.alignment", 32)
        .tensor("a", &[4, 2], 0, 0)
        .tensor("b", &[8], 0, 32)
        .data(64)
}

#[test]
fn a_valid_file_parses() {
    let h = parse(&valid()).unwrap();
    assert_eq!(h.tensors.len(), 2);
    assert_eq!(h.tensors[1].bytes(), 32);
}

#[test]
fn every_truncation_is_an_error() {
    let b = valid();
    for len in 0..b.0.len() - 64 {
        let r = Header::parse(&b.0[..len], len as u64);
        let refused = matches!(
            r,
            Err(GgufError::Truncated { .. }
                | GgufError::TensorPastEnd { .. }
                | GgufError::CountTooLarge { .. })
        );
        assert!(refused, "{len}: {r:?}");
    }
}

#[test]
fn bad_magic_and_versions() {
    let mut b = valid();
    b.0[0] = b'X';
    assert!(matches!(parse(&b), Err(GgufError::BadMagic(_))));
    for v in [1u32, 4, 99] {
        let mut b = valid();
        b.0[4..8].copy_from_slice(&v.to_le_bytes());
        assert!(matches!(parse(&b), Err(GgufError::UnsupportedVersion(x)) if x == v));
    }
}

#[test]
fn counts_and_lengths_larger_than_the_file() {
    let b = Bytes::start(u64::MAX, 0).data(0);
    assert!(matches!(parse(&b), Err(GgufError::CountTooLarge { .. })));
    let b = Bytes::start(0, 1 << 40).data(0);
    assert!(matches!(parse(&b), Err(GgufError::CountTooLarge { .. })));
    let b = Bytes::start(0, 1).u64(u64::MAX - 3).data(16);
    assert!(matches!(parse(&b), Err(GgufError::CountTooLarge { .. })));
    // An array of 2^40 u32.
    let b = Bytes::start(0, 1)
        .str("k")
        .u32(9)
        .u32(4)
        .u64(1 << 40)
        .data(16);
    assert!(matches!(parse(&b), Err(GgufError::CountTooLarge { .. })));
}

#[test]
fn bad_values() {
    let b = Bytes::start(0, 1).str("k").u32(77).u32(0).data(0);
    assert!(matches!(parse(&b), Err(GgufError::UnknownValueType(77))));
    let b = Bytes::start(0, 1)
        .str("k")
        .u32(9)
        .u32(77)
        .u64(1)
        .u32(0)
        .data(0);
    assert!(matches!(parse(&b), Err(GgufError::UnknownValueType(77))));
    // Arrays nested four deep.
    let b = Bytes::start(0, 1)
        .str("k")
        .u32(9)
        .u32(9)
        .u64(1)
        .u32(9)
        .u64(1)
        .u32(9)
        .u64(1)
        .u32(4)
        .u64(1)
        .u32(0)
        .data(0);
    assert!(matches!(parse(&b), Err(GgufError::NestingTooDeep)));
    let b = Bytes::start(0, 2).kv_u32("k", 1).kv_u32("k", 2).data(0);
    assert!(matches!(parse(&b), Err(GgufError::DuplicateKey(_))));
    let b = Bytes::start(0, 1)
        .str("k")
        .u32(8)
        .u64(2)
        .raw(&[0xff, 0xfe])
        .data(0);
    assert!(matches!(parse(&b), Err(GgufError::BadString)));
    let b = Bytes::start(0, 1).kv_u32("general.alignment", 24).data(0);
    assert!(matches!(parse(&b), Err(GgufError::BadAlignment(24))));
}

#[test]
fn bad_tensors() {
    let one = |name: &str, dims: &[u64], ty: u32, offset: u64| {
        Bytes::start(1, 0).tensor(name, dims, ty, offset).data(64)
    };
    assert!(matches!(
        parse(&one("t", &[4], 99, 0)),
        Err(GgufError::UnknownTensorType { id: 99, .. })
    ));
    assert!(matches!(
        parse(&one("t", &[4], 0, 8)),
        Err(GgufError::Misaligned { .. })
    ));
    assert!(matches!(
        parse(&one("t", &[4], 0, 64)),
        Err(GgufError::TensorPastEnd { .. })
    ));
    assert!(matches!(
        parse(&one("t", &[4], 0, u64::MAX - 31)),
        Err(GgufError::Misaligned { .. } | GgufError::TensorPastEnd { .. })
    ));
    assert!(matches!(
        parse(&one("t", &[1 << 30, 1 << 30], 0, 0)),
        Err(GgufError::TensorPastEnd { .. })
    ));
    assert!(matches!(
        parse(&one("t", &[1 << 40, 1 << 40], 0, 0)),
        Err(GgufError::BadShape { .. })
    ));
    assert!(matches!(
        parse(&one("t", &[u64::MAX, 2], 0, 0)),
        Err(GgufError::BadShape { .. })
    ));
    assert!(matches!(
        parse(&one("t", &[0], 0, 0)),
        Err(GgufError::BadShape { .. })
    ));
    assert!(matches!(
        parse(&one("t", &[], 0, 0)),
        Err(GgufError::BadShape { .. })
    ));
    assert!(matches!(
        parse(&one("t", &[1, 1, 1, 1, 1], 0, 0)),
        Err(GgufError::BadShape { .. })
    ));
    // 48 weights of Q4_0 (blocks of 32).
    assert!(matches!(
        parse(&one("t", &[48], 2, 0)),
        Err(GgufError::PartialBlock { .. })
    ));
    // An MXFP4 matrix whose rows of 48 are not whole blocks, though its 96 weights would be three.
    let err = parse(&one("blk.0.ffn_up_exps.weight", &[48, 2], 39, 0)).unwrap_err();
    assert!(matches!(err, GgufError::PartialBlock { .. }));
    assert_eq!(
        err.to_string(),
        "tensor \"blk.0.ffn_up_exps.weight\" of MXFP4 has rows of 48 weights, not a whole number of \
         MXFP4 blocks (32 weights each)"
    );
    let b = Bytes::start(2, 0)
        .tensor("t", &[4], 0, 0)
        .tensor("t", &[4], 0, 32)
        .data(64);
    assert!(matches!(parse(&b), Err(GgufError::DuplicateTensor(_))));
}

/// Seeded random corruption of a real header: errors are fine, panics are not.
#[test]
fn corrupted_real_headers_never_panic() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let Ok(file) = std::fs::read(&path) else {
        panic!("{} is missing: run scripts/fetch-model.sh", path.display());
    };
    let header_len = Header::parse(&file, file.len() as u64).unwrap().data_offset as usize;
    let mut rng = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut prefix = file[..header_len].to_vec();
    for _ in 0..300 {
        let saved = prefix.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % header_len as u64) as usize;
            prefix[at] = next() as u8;
        }
        let _ = Header::parse(&prefix, file.len() as u64);
        prefix = saved;
    }
}

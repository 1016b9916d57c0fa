//! The CPU quant types against the `gguf` Python package and llama.cpp (committed goldens made by
//! tests/goldens/make_quant_goldens.py), quantization error on seeded random data, the GGUF writer, and model
//! quantization.

use pollster::FutureExt as _;
use std::path::{Path, PathBuf};
use wick::gguf::write::{TensorSpec, WriteError, Writer};
use wick::gguf::{self, FileSource, GgmlType, Header, Value};
use wick::quant::{self, QuantError};
use wick::quantize::{output_type, quantize_model};

use crate::common;

use common::quant_goldens::goldens;
use common::watched_source::WatchedSource;

// ---------------------------------------------------------------------------------------------------------------
// Goldens

/// Equal bit for bit, or both NaN.
fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn every_type_has_goldens() {
    let goldens = goldens();
    for ty in GgmlType::ALL {
        let has = |kind: &str| goldens.iter().any(|g| g.ty == ty && g.name.contains(kind));
        let quantized_by = if matches!(ty, GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K) {
            ".llama."
        } else {
            ".quant."
        };
        assert!(has(quantized_by), "{ty}: no {quantized_by}bin golden");
        assert!(
            ty.block_len() == 1 || has(".raw."),
            "{ty}: no .raw.bin golden"
        );
    }
}

#[test]
fn dequantize_matches_gguf() {
    for g in goldens() {
        let mut out = vec![0f32; g.dequantized.len()];
        quant::dequantize(g.ty, &g.bytes, &mut out).unwrap();
        for (i, (&a, &b)) in out.iter().zip(&g.dequantized).enumerate() {
            assert!(same(a, b), "{}: weight {i}: Wick {a:e}, gguf {b:e}", g.name);
        }
    }
}

#[test]
fn quantize_matches_reference_bytes() {
    for g in goldens() {
        let Some(input) = &g.input else { continue };
        let mut bytes = Vec::new();
        quant::quantize(g.ty, input, &mut bytes).unwrap();
        let block = g.ty.block_bytes();
        for (i, (ours, theirs)) in bytes.chunks(block).zip(g.bytes.chunks(block)).enumerate() {
            assert_eq!(ours, theirs, "{}: block {i} differs", g.name);
        }
        assert_eq!(bytes.len(), g.bytes.len(), "{}", g.name);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Quantization error on seeded random data

/// SplitMix64, for seeded data without a dependency.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn uniform(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 + 0.5) / (1u64 << 24) as f32
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f32 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
    }

    fn normals(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.normal()).collect()
    }
}

/// Normalized mean squared error: Σ(x - y)² / Σx².
fn nmse(x: &[f32], y: &[f32]) -> f64 {
    let err: f64 = x
        .iter()
        .zip(y)
        .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
        .sum();
    err / x.iter().map(|&a| (a as f64).powi(2)).sum::<f64>()
}

fn round_trip(ty: GgmlType, x: &[f32]) -> Vec<f32> {
    let mut bytes = Vec::new();
    quant::quantize(ty, x, &mut bytes).unwrap();
    assert_eq!(bytes.len() as u64, ty.bytes_for(x.len() as u64).unwrap());
    let mut y = vec![0f32; x.len()];
    quant::dequantize(ty, &bytes, &mut y).unwrap();
    y
}

/// Upper bounds on the NMSE of a quantize/dequantize round trip of Gaussian weights, about 10% above what was
/// measured: a type quantized with fewer bits, a cruder scale search, or a misplaced nibble, scale or min lands
/// above its bound.
const NMSE_BOUNDS: [(GgmlType, f64); 12] = [
    (GgmlType::F32, 0.0),
    (GgmlType::F16, 5.0e-8),
    (GgmlType::BF16, 3.2e-6),
    (GgmlType::Q8_0, 3.3e-5),
    (GgmlType::Q6_K, 3.5e-4),
    (GgmlType::Q5_K, 1.45e-3),
    (GgmlType::Q5_1, 1.6e-3),
    (GgmlType::Q5_0, 2.0e-3),
    (GgmlType::Q4_K, 5.6e-3),
    (GgmlType::Q4_1, 6.8e-3),
    (GgmlType::Q4_0, 8.1e-3),
    (GgmlType::MXFP4, 1.5e-2),
];

#[test]
fn round_trip_error_is_bounded() {
    let mut rng = Rng(1757);
    for (ty, bound) in NMSE_BOUNDS {
        let n = if ty.block_len() == 256 {
            219 * 256
        } else {
            1757 * 32
        };
        let x = rng.normals(n);
        let e = nmse(&x, &round_trip(ty, &x));
        println!("{ty}: NMSE {e:.3e} (bound {bound:.2e})");
        assert!(e <= bound, "{ty}: NMSE {e:.3e} above {bound:.2e}");
    }
}

#[test]
fn round_trip_holds_for_weights_of_every_size_and_zero_blocks() {
    // Blocks of weights from 1e-3 to 1e3 in size stay near their type's bound (one block varies more than many);
    // smaller ones lose precision to the f16 scales, in llama.cpp as here. An all-zero block stays zero.
    let mut rng = Rng(7);
    for (ty, bound) in NMSE_BOUNDS {
        let len = ty.block_len().max(32);
        let mut x: Vec<f32> = Vec::new();
        for exp in -3..=3 {
            x.extend(rng.normals(len).iter().map(|v| v * 10f32.powi(exp)));
        }
        x.extend(std::iter::repeat_n(0.0, len));
        let y = round_trip(ty, &x);
        for (xb, yb) in x.chunks(len).zip(y.chunks(len)) {
            if xb.iter().all(|&v| v == 0.0) {
                assert!(
                    yb.iter().all(|&v| v == 0.0),
                    "{ty}: a zero block came back nonzero"
                );
            } else {
                let e = nmse(xb, yb);
                assert!(
                    e <= 3.0 * bound,
                    "{ty}: NMSE {e:.3e} on a block of magnitude {:e}",
                    xb[0].abs()
                );
            }
        }
    }
}

#[test]
fn wrong_lengths_are_errors_not_panics() {
    for ty in GgmlType::ALL {
        let (len, bytes) = (ty.block_len(), ty.block_bytes());
        let mut out = vec![0f32; 2 * len];
        assert!(quant::dequantize(ty, &vec![0u8; 2 * bytes], &mut out).is_ok());
        assert!(matches!(
            quant::dequantize(ty, &vec![0u8; 2 * bytes - 1], &mut out),
            Err(QuantError::WrongByteCount { .. })
        ));
        assert!(quant::dequantize(ty, &vec![0u8; 3 * bytes], &mut out).is_err());
        assert!(quant::dequantize(ty, &[], &mut []).is_ok());

        let mut dst = vec![7u8];
        assert!(quant::quantize(ty, &vec![1.0; 2 * len], &mut dst).is_ok());
        assert_eq!(
            dst.len(),
            1 + 2 * bytes,
            "{ty}: quantize appends whole blocks"
        );
        if len > 1 {
            assert!(matches!(
                quant::dequantize(ty, &[], &mut out[..len - 1]),
                Err(QuantError::PartialBlock { .. })
            ));
            assert!(matches!(
                quant::quantize(ty, &out[..len + 1], &mut dst),
                Err(QuantError::PartialBlock { .. })
            ));
        }
    }
}

#[test]
fn non_finite_weights_do_not_panic() {
    for ty in GgmlType::ALL {
        let n = ty.block_len().max(32) * 2;
        for bad in [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN_POSITIVE / 8.0,
        ] {
            let mut x = vec![0.5f32; n];
            x[3] = bad;
            let mut bytes = Vec::new();
            quant::quantize(ty, &x, &mut bytes).unwrap();
            quant::dequantize(ty, &bytes, &mut x).unwrap();
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// GGUF writer

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("wick-test-{}-{name}", std::process::id()))
}

fn every_value_type() -> Vec<(String, Value)> {
    let values = vec![
        Value::U8(200),
        Value::I8(-100),
        Value::U16(60000),
        Value::I16(-30000),
        Value::U32(4_000_000_000),
        Value::I32(-2_000_000_000),
        Value::F32(-1.5e-3),
        Value::Bool(true),
        Value::String("héllo, wörld".into()),
        Value::Array(vec![Value::I32(1), Value::I32(-2), Value::I32(3)]),
        Value::U64(u64::MAX - 1),
        Value::I64(i64::MIN + 1),
        Value::F64(std::f64::consts::PI),
        Value::Array(vec![
            Value::String("a".into()),
            Value::String(String::new()),
        ]),
        Value::Array(vec![
            Value::Array(vec![Value::F32(1.0)]),
            Value::Array(vec![Value::U8(1), Value::U8(2)]),
        ]),
        Value::Array(vec![]),
        Value::Array(vec![Value::Bool(false), Value::Bool(true)]),
    ];
    let mut metadata: Vec<(String, Value)> = values
        .into_iter()
        .enumerate()
        .map(|(i, v)| (format!("test.value_{i}.type_{}", v.type_id()), v))
        .collect();
    metadata.push(("general.alignment".into(), Value::U32(64)));
    metadata
}

#[test]
fn writer_round_trips_every_value_type_and_tensor_layout() {
    let metadata = every_value_type();
    let tensors = [
        spec("a", &[3], GgmlType::F32),
        spec("b.weight", &[64, 3], GgmlType::Q8_0),
        spec("c", &[256, 1, 2], GgmlType::Q4_K),
        spec("d", &[5, 1, 1, 1], GgmlType::F16),
    ];
    let mut rng = Rng(3);
    let data: Vec<Vec<u8>> = tensors
        .iter()
        .map(|t| {
            let n = t.ty.bytes_for(t.dims.iter().product()).unwrap();
            (0..n).map(|_| rng.next_u64() as u8).collect()
        })
        .collect();

    let mut w = Writer::new(Vec::new(), &metadata, &tensors).unwrap();
    for d in &data {
        // In uneven pieces, as a streaming caller would.
        let (first, rest) = d.split_at(d.len() / 3);
        w.write_data(first).unwrap();
        w.write_data(rest).unwrap();
    }
    let file = w.finish().unwrap();

    let h = Header::parse(&file, file.len() as u64).unwrap();
    assert_eq!(h.version, 3);
    assert_eq!(h.metadata, metadata);
    assert_eq!(h.alignment, 64);
    assert_eq!(h.data_offset % 64, 0);
    assert_eq!(file.len() as u64 % 64, 0, "the last tensor is padded too");
    for ((t, spec), d) in h.tensors.iter().zip(&tensors).zip(&data) {
        assert_eq!((&t.name, &t.dims, t.ty), (&spec.name, &spec.dims, spec.ty));
        assert_eq!(t.offset % 64, 0);
        let r = h.tensor_range(t);
        assert_eq!(
            &file[r.start as usize..r.end as usize],
            &d[..],
            "{}",
            t.name
        );
    }
}

#[test]
fn writer_refuses_what_gguf_cannot_hold() {
    let mixed = vec![(
        "k".to_string(),
        Value::Array(vec![Value::U8(1), Value::I8(1)]),
    )];
    assert!(matches!(
        Writer::new(Vec::new(), &mixed, &[]),
        Err(WriteError::MixedArray { .. })
    ));
    let twice = vec![
        ("k".to_string(), Value::U8(1)),
        ("k".to_string(), Value::U8(2)),
    ];
    assert!(matches!(
        Writer::new(Vec::new(), &twice, &[]),
        Err(WriteError::DuplicateKey(_))
    ));
    let align = vec![("general.alignment".to_string(), Value::U32(48))];
    assert!(matches!(
        Writer::new(Vec::new(), &align, &[]),
        Err(WriteError::BadAlignment(_))
    ));
    for bad in [
        spec("x", &[40, 2], GgmlType::Q8_0),
        spec("x", &[], GgmlType::F32),
        spec("x", &[0], GgmlType::F32),
    ] {
        assert!(Writer::new(Vec::new(), &[], &[bad]).is_err());
    }

    let tensors = [
        spec("x", &[32], GgmlType::Q8_0),
        spec("y", &[2], GgmlType::F32),
    ];
    let mut w = Writer::new(Vec::new(), &[], &tensors).unwrap();
    w.write_data(&[0; 34]).unwrap();
    assert!(
        matches!(w.finish(), Err(WriteError::MissingData { name, expected: 8, got: 0 }) if name == "y")
    );
    let mut w = Writer::new(Vec::new(), &[], &tensors).unwrap();
    assert!(matches!(
        w.write_data(&[0; 34 + 8 + 1]),
        Err(WriteError::TooMuchData(1))
    ));
}

// ---------------------------------------------------------------------------------------------------------------
// Model quantization

fn spec(name: &str, dims: &[u64], ty: GgmlType) -> TensorSpec {
    TensorSpec {
        name: name.into(),
        dims: dims.to_vec(),
        ty,
    }
}

/// What quantize_model makes of a tensor.
#[derive(Clone, Copy, PartialEq)]
enum Becomes {
    Target,
    /// The 32-weight type a K target falls back to.
    Fallback,
    Kept,
}

/// A small model covering every path through quantize_model: (name, dims, type, what it becomes).
const MODEL: [(&str, &[u64], GgmlType, Becomes); 8] = [
    (
        "token_embd.weight",
        &[512, 6],
        GgmlType::F32,
        Becomes::Target,
    ),
    (
        "blk.0.attn_norm.weight",
        &[512],
        GgmlType::F32,
        Becomes::Kept,
    ),
    // Requantized from another quant type.
    (
        "blk.0.attn_q.weight",
        &[256, 4],
        GgmlType::Q8_0,
        Becomes::Target,
    ),
    // Rows of 576, as in SmolLM2.
    (
        "blk.0.ffn_down.weight",
        &[576, 3],
        GgmlType::F16,
        Becomes::Fallback,
    ),
    // The MoE router stays as it is in llama.cpp.
    (
        "blk.0.ffn_gate_inp.weight",
        &[512, 4],
        GgmlType::F32,
        Becomes::Kept,
    ),
    // Rows that no 32-weight type fits.
    ("blk.0.odd.weight", &[40, 3], GgmlType::F32, Becomes::Kept),
    // Experts.
    (
        "blk.0.ffn_up_exps.weight",
        &[256, 2, 2],
        GgmlType::Q6_K,
        Becomes::Target,
    ),
    // Copied as it is when it is already of the target type.
    ("output.weight", &[256, 2], GgmlType::Q4_K, Becomes::Target),
];

fn write_model(path: &Path) -> Vec<(String, Value)> {
    let metadata = vec![
        ("general.architecture".into(), Value::String("llama".into())),
        ("general.file_type".into(), Value::U32(0)),
        ("llama.block_count".into(), Value::U32(1)),
        (
            "tokenizer.ggml.tokens".into(),
            Value::Array(vec![Value::String("a".into())]),
        ),
    ];
    let tensors: Vec<TensorSpec> = MODEL.iter().map(|&(n, d, ty, _)| spec(n, d, ty)).collect();
    let mut w = Writer::new(std::fs::File::create(path).unwrap(), &metadata, &tensors).unwrap();
    let mut rng = Rng(11);
    for t in &tensors {
        let x = rng.normals(t.dims.iter().product::<u64>() as usize);
        let mut bytes = Vec::new();
        quant::quantize(t.ty, &x, &mut bytes).unwrap();
        w.write_data(&bytes).unwrap();
    }
    w.finish().unwrap();
    metadata
}

fn read_model(path: &Path) -> (Header, Vec<u8>) {
    let h = gguf::read_header(&FileSource::open(path).unwrap())
        .block_on()
        .unwrap();
    (h, std::fs::read(path).unwrap())
}

fn tensor_data<'a>(h: &Header, file: &'a [u8], t: &gguf::TensorInfo) -> &'a [u8] {
    let r = h.tensor_range(t);
    &file[r.start as usize..r.end as usize]
}

#[test]
fn quantize_model_converts_each_tensor_as_llama_cpp_does() {
    let src_path = temp_path("src.gguf");
    let metadata = write_model(&src_path);
    let (src_header, src_file) = read_model(&src_path);
    let src = FileSource::open(&src_path).unwrap();

    // (target, what two-dimensional matrices take, its fallback, general.file_type)
    for (target, matrices, fallback, file_type) in [
        (GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q5_0, 14),
        (GgmlType::Q6_K, GgmlType::Q6_K, GgmlType::Q8_0, 18),
        (GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0, 7),
        // llama.cpp's MXFP4_MOE: the experts MXFP4, every other matrix Q8_0.
        (GgmlType::MXFP4, GgmlType::Q8_0, GgmlType::Q8_0, 38),
    ] {
        let dst = temp_path(&format!("{target}.gguf"));
        let mut calls = Vec::new();
        let report = quantize_model(&src, &dst, target, &mut |done, total| {
            calls.push((done, total))
        })
        .block_on();
        let report = report.unwrap();
        let (h, file) = read_model(&dst);

        // Metadata: copied, with the file type and quantization version set.
        assert_eq!(h.get_u64("general.file_type"), Some(file_type));
        assert_eq!(h.get_u64("general.quantization_version"), Some(2));
        for (k, v) in &metadata[2..] {
            assert_eq!(h.get(k), Some(v), "{k}");
        }

        // Tensors: each of its expected type, holding exactly what quantizing the source gives.
        for ((t, s), (_, _, _, becomes)) in h.tensors.iter().zip(&src_header.tensors).zip(MODEL) {
            let ty = match becomes {
                Becomes::Target if s.dims.len() > 2 => target,
                Becomes::Target => matrices,
                Becomes::Fallback => fallback,
                Becomes::Kept => s.ty,
            };
            assert_eq!((&t.name, &t.dims, t.ty), (&s.name, &s.dims, ty), "{target}");
            assert_eq!(output_type(s, target), ty);
            let src_bytes = tensor_data(&src_header, &src_file, s);
            let mut expected = Vec::new();
            if ty == s.ty {
                expected.extend_from_slice(src_bytes);
            } else {
                let mut x = vec![0f32; s.elements() as usize];
                quant::dequantize(s.ty, src_bytes, &mut x).unwrap();
                quant::quantize(ty, &x, &mut expected).unwrap();
            }
            assert!(
                tensor_data(&h, &file, t) == expected,
                "{target}: {}",
                t.name
            );
        }

        // The report and the progress calls add up.
        let total: u64 = src_header.tensors.iter().map(|t| t.bytes()).sum();
        assert_eq!(calls.first(), Some(&(0, total)));
        assert_eq!(calls.last(), Some(&(total, total)));
        assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0));
        let tensors: usize = report.per_type.values().map(|c| c.tensors).sum();
        assert_eq!(tensors, MODEL.len());
        assert_eq!(report.per_type[&GgmlType::F32].tensors, 3);
        assert_eq!(
            report.bytes_out,
            h.tensors.iter().map(|t| t.bytes()).sum::<u64>()
        );

        // Deterministic: a second run writes the same bytes.
        quantize_model(&src, &dst, target, &mut |_, _| {})
            .block_on()
            .unwrap();
        assert!(
            std::fs::read(&dst).unwrap() == file,
            "{target}: not deterministic"
        );
        std::fs::remove_file(&dst).unwrap();
    }
    std::fs::remove_file(&src_path).unwrap();
}

#[test]
fn quantize_model_names_what_failed_and_leaves_no_file() {
    let bad = temp_path("bad.gguf");
    std::fs::write(&bad, b"not a gguf file at all").unwrap();
    let src = FileSource::open(&bad).unwrap();
    let err = quantize_model(
        &src,
        &temp_path("never.gguf"),
        GgmlType::Q8_0,
        &mut |_, _| {},
    )
    .block_on();
    let err = err.unwrap_err().to_string();
    assert!(err.contains("bad.gguf"), "{err}");
    std::fs::remove_file(&bad).unwrap();

    // A source that fails halfway: the error names the tensor, and no partial file stays behind.
    let good = temp_path("good.gguf");
    write_model(&good);
    let (h, _) = read_model(&good);
    let (mut src, _) = WatchedSource::open(&good);
    src.fail_from = h
        .tensor_range(h.tensor("blk.0.attn_q.weight").unwrap())
        .start;
    let dst = temp_path("half.gguf");
    let err = quantize_model(&src, &dst, GgmlType::Q8_0, &mut |_, _| {})
        .block_on()
        .unwrap_err();
    assert!(err.to_string().contains("blk.0.attn_q.weight"), "{err}");
    assert!(!dst.exists() && !temp_path("half.gguf.partial").exists());
    std::fs::remove_file(&good).unwrap();
}

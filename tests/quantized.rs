//! SmolLM2 re-quantized by `wick quantize` (in process here) to Q4_0, Q8_0, Q4_K, Q5_K and Q6_K: each file
//! is byte for byte the one llama.cpp decoded for the goldens (tests/goldens/make_quantized_goldens.py,
//! tests/goldens/smollm2-quantized-greedy.json), and Wick decodes it as llama.cpp did, by the near-tie
//! method, and as exact f32 math on the same file does (numpy over the `gguf` package's dequantizers,
//! tests/goldens/numpy/quantized/). Width 576 makes most K-type matrices fall back (Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0);
//! tests/random_llama.rs covers the K kernels on every matrix.

use crate::common;

use common::fidelity::{check_greedy, first_steps, Agreement, Tolerance};
use common::{gpu, model_path, options};
use pollster::FutureExt as _;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use wick::engine::Engine;
use wick::gguf::{read_header, FileSource, GgmlType};
use wick::quantize::quantize_model;

/// llama.cpp rounds activations to 8 bits for its quantized dot products. With the output head in
/// Q4_0 that puts its first logits of "The capital of France is" up to 1.68 from exact math (the f32
/// numpy reference, which Wick matches to 1e-4); with 5 bits or more, up to 1.0 (Q8_0).
fn llama_cpp_tolerance(ty: GgmlType) -> Tolerance {
    let logit = if ty == GgmlType::Q4_0 { 2.0 } else { 1.25 };
    Tolerance {
        logit,
        clear_gap: logit,
    }
}

/// The f32 numpy reference on the same file (tests/goldens/make_quantized_numpy.sh).
const F32: Tolerance = Tolerance {
    logit: 0.02,
    clear_gap: 0.04,
};

fn sha256(path: &std::path::Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn requantized_models_decode_as_in_llama_cpp() {
    let Some(gpu) = gpu() else { return };
    let golden: Value =
        serde_json::from_str(include_str!("goldens/smollm2-quantized-greedy.json")).unwrap();
    let source = FileSource::open(model_path()).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("wick-quantized-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for file in golden["files"].as_array().unwrap() {
        let name = file["type"].as_str().unwrap();
        let ty = GgmlType::from_name(name).unwrap();
        let path = dir.join(format!("smollm2.{name}.gguf"));
        quantize_model(&source, &path, ty, &mut |_, _| {})
            .block_on()
            .unwrap();
        assert_eq!(
            sha256(&path),
            file["sha256"].as_str().unwrap(),
            "{name}: not the file llama.cpp decoded"
        );
        let header = read_header(&FileSource::open(&path).unwrap())
            .block_on()
            .unwrap();
        let mut types: BTreeMap<String, u64> = BTreeMap::new();
        for t in &header.tensors {
            *types.entry(t.ty.name().to_string()).or_default() += 1;
        }
        let want: BTreeMap<String, u64> =
            serde_json::from_value(file["tensor_types"].clone()).unwrap();
        assert_eq!(types, want, "{name}: tensor types");

        let mut engine = Engine::load(
            gpu.clone(),
            &FileSource::open(&path).unwrap(),
            &options(64),
            &mut |_, _| {},
        )
        .block_on()
        .unwrap();
        let mut total = Agreement::default();
        // The first 8 steps of each reply (`WICK_FULL_REPLIES=1`: whole).
        for record in file["records"].as_array().unwrap() {
            let record = first_steps(record, 8);
            total.add(&check_greedy(&mut engine, &record, llama_cpp_tolerance(ty)));
        }
        let exact = root.join(format!("tests/goldens/numpy/quantized/smollm2-{name}.json"));
        let exact: Value = serde_json::from_str(&std::fs::read_to_string(exact).unwrap()).unwrap();
        let f32_agreement = check_greedy(&mut engine, &exact, F32);
        eprintln!("{name} {types:?}: llama.cpp {total:?}; f32 reference {f32_agreement:?}");
        std::fs::remove_file(&path).unwrap();
    }
    let _ = std::fs::remove_dir(&dir);
}

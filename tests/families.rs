//! The real qwen2 and gemma3 files (`scripts/fetch-model.sh gemma3 qwen2.5-coder`): greedy decoding on
//! the GPU against llama.cpp and against an f32 numpy reference (tests/goldens/families/, made by
//! tests/goldens/make_family_goldens.py) by the near-tie method (tests/common/fidelity.rs), and their
//! tokenizers (Gemma's SentencePiece, Qwen2's BPE) against llama.cpp's.

mod common;

use common::fidelity::{check_greedy, ids, Agreement, Tolerance};
use common::gpu;
use pollster::FutureExt as _;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use wick::engine::{Engine, LoadOptions};
use wick::gguf::{read_header, FileSource};
use wick::tokenizer::Tokenizer;

/// llama.cpp's 8-bit activations put its logits a few tenths from exact math (more on Gemma's large
/// logits); Wick is held to the f32 reference tightly.
const LLAMA_CPP: Tolerance = Tolerance {
    logit: 1.5,
    clear_gap: 1.5,
};
const F32: Tolerance = Tolerance {
    logit: 0.03,
    clear_gap: 0.06,
};

fn model(file: &str) -> PathBuf {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(file);
    assert!(
        p.exists(),
        "{} is missing: run scripts/fetch-model.sh gemma3 qwen2.5-coder",
        p.display()
    );
    p
}

fn golden(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/goldens/families")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Everything the golden holds, on the file it names.
fn check_family(golden_name: &str) {
    let g = golden(golden_name);
    let path = model(g["model"].as_str().unwrap());
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(
        format!("{:x}", Sha256::digest(&bytes)),
        g["model_sha256"].as_str().unwrap(),
        "{} is not the file the goldens were made from",
        path.display()
    );
    drop(bytes);
    let source = FileSource::open(&path).unwrap();

    let tokenizer = Tokenizer::from_gguf(&read_header(&source).block_on().unwrap()).unwrap();
    for case in g["tokenize"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        assert_eq!(tokenizer.encode(text, false), ids(&case["ids"]), "{text:?}");
    }
    for record in g["llama_cpp"].as_array().unwrap() {
        let prompt = record["prompt"].as_str().unwrap();
        let mut want = tokenizer
            .bos()
            .filter(|_| tokenizer.add_bos())
            .into_iter()
            .collect::<Vec<_>>();
        want.extend(tokenizer.encode(prompt, true));
        assert_eq!(want, ids(&record["prompt_ids"]), "{prompt:?}");
    }

    let Some(gpu) = gpu() else { return };
    let options = LoadOptions {
        n_ctx: 256,
        ..Default::default()
    };
    let mut engine = Engine::load(gpu, &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    for (key, tolerance) in [("f32", F32), ("llama_cpp", LLAMA_CPP)] {
        let mut total = Agreement::default();
        for record in g[key].as_array().unwrap() {
            total.add(&check_greedy(&mut engine, record, tolerance));
        }
        eprintln!("{golden_name} against {key}: {total:?}");
        assert!(
            total.near_ties * 10 <= total.same,
            "{key}: too many near ties: {total:?}"
        );
    }
}

#[test]
fn qwen2_matches_llama_cpp_and_f32() {
    check_family("qwen2.5-coder-0.5b-q4_k_m");
}

#[test]
fn gemma3_matches_llama_cpp_and_f32() {
    check_family("gemma-3-270m-q4_k_m");
}

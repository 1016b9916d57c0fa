//! Tiny random-weight gemma4 (Gemma 4) files in llama.cpp's exact layout (tests/data/random-gemma4-*.gguf,
//! made by tests/goldens/make_random_gemma4.py, whose docstring says what they exercise; goldens in
//! tests/goldens/random-gemma4.json): sliding layers with heads of their own size, proportional RoPE on
//! the global ones, v normed, layers that read earlier layers' caches, per-layer embeddings and output
//! scales, against llama.cpp and an f64 numpy reference of Wick's own (tests/goldens/numpy_gemma4.py).
//! - 24 tokens teacher-forced with all logits at every position, and a 12-token greedy run
//!   (tests/common/random_model.rs, as for the other families);
//! - 300 greedy tokens against both references by the near-tie method;
//! - perplexity against both;
//! - prompts in chunks (64, 7) equal to token-at-a-time decoding;
//! - the per-layer table read from the file by rows gives what it gives on the GPU;
//! - the layers that read another's cache hold none of their own;
//! - a pattern array of the wrong length, a per-layer table that does not match the layers, and the
//!   MoE variant, refused at load with a message naming them.

use crate::common;

use common::edit_gguf::{set, variant};
use common::fidelity::{check_greedy, Tolerance};
use common::gpu;
use common::random_model::{check_all, check_text_perplexity};
use pollster::FutureExt as _;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wick::engine::{Engine, LoadOptions};
use wick::gguf::{FileSource, MemorySource, Value};
use wick::gpu::Gpu;

/// Largest |Wick - f64 reference| on any logit; the reference is rounded to 4 decimals.
const TOL_F32: f32 = 0.005;
/// llama.cpp's CPU path on the F32 file: f16 KV cache, f32 otherwise.
const LLAMA_CPP_F32: Tolerance = Tolerance {
    logit: 0.1,
    clear_gap: 0.1,
};
/// Before quantized matrix products it rounds activations to 8 bits, which moves its logits from
/// exact math's on the Q8_0 and Q4_K files: the f64 reference is the tight check there.
const LLAMA_CPP_QUANTIZED: Tolerance = Tolerance {
    logit: 1.5,
    clear_gap: 1.5,
};

fn llama_cpp(record: &Json) -> Tolerance {
    match record["file"].as_str().unwrap().ends_with("f32.gguf") {
        true => LLAMA_CPP_F32,
        false => LLAMA_CPP_QUANTIZED,
    }
}
/// Over 300 greedy steps llama.cpp's 8-bit activations drift further from exact math than over the 24
/// teacher-forced positions (1.55 at step 41 of the Q4_K file).
const LLAMA_CPP_QUANTIZED_LONG: Tolerance = Tolerance {
    logit: 2.0,
    clear_gap: 2.0,
};

fn llama_cpp_long(record: &Json) -> Tolerance {
    match record["file"].as_str().unwrap().ends_with("f32.gguf") {
        true => LLAMA_CPP_F32,
        false => LLAMA_CPP_QUANTIZED_LONG,
    }
}
/// Against the f64 reference over 300 steps.
const F32_LONG: Tolerance = Tolerance {
    logit: 0.01,
    clear_gap: 0.02,
};

fn golden() -> Json {
    serde_json::from_str(include_str!("goldens/random-gemma4.json")).unwrap()
}

fn path(record: &Json) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(record["file"].as_str().unwrap())
}

fn load_with(
    gpu: &Arc<Gpu>,
    source: &dyn wick::gguf::ByteSource,
    options: LoadOptions,
) -> Result<Engine, wick::Error> {
    Engine::load(gpu.clone(), source, &options, &mut |_, _| {}).block_on()
}

fn load(gpu: &Arc<Gpu>, source: &dyn wick::gguf::ByteSource, n_ctx: u32, batch: u32) -> Engine {
    let options = LoadOptions {
        n_ctx,
        batch: Some(batch),
        ..Default::default()
    };
    load_with(gpu, source, options).unwrap()
}

#[test]
fn random_gemma4_matches_references() {
    let Some(gpu) = gpu() else { return };
    let golden = golden();
    let mut reports = Vec::new();
    for record in golden["records"].as_array().unwrap() {
        let one = serde_json::json!({ "records": [record] });
        reports.extend(check_all(&gpu, &one, TOL_F32, llama_cpp(record)));
    }
    assert_eq!(reports.len(), 3);
}

#[test]
fn random_gemma4_greedy_300_tokens() {
    let Some(gpu) = gpu() else { return };
    for record in golden()["records"].as_array().unwrap() {
        let source = FileSource::open(path(record)).unwrap();
        let mut engine = load(&gpu, &source, 512, 64);
        let f32_ref = check_greedy(&mut engine, &record["f32_greedy_long"], F32_LONG);
        let llama = check_greedy(&mut engine, &record["greedy_long"], llama_cpp_long(record));
        eprintln!(
            "{}: 300 greedy steps, f64 reference {f32_ref:?}, llama.cpp {llama:?}",
            record["file"]
        );
        assert!(f32_ref.same >= 295, "{}: {f32_ref:?}", record["file"]);
    }
}

fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// A prompt over the vocabulary, and logits after it and 4 more steps.
fn run(engine: &mut Engine, n_vocab: u32) -> Vec<Vec<f32>> {
    let prompt: Vec<u32> = (0..150u32).map(|i| (i * 7919 + 13) % n_vocab).collect();
    let mut out = vec![engine.prefill(&prompt).block_on().unwrap()];
    for t in 0..4 {
        out.push(engine.step(t, true).block_on().unwrap().unwrap());
    }
    out
}

#[test]
fn random_gemma4_chunked_prefill_equals_token_at_a_time() {
    let Some(gpu) = gpu() else { return };
    let record = &golden()["records"][0];
    let source = FileSource::open(path(record)).unwrap();
    let mut one = load(&gpu, &source, 256, 1);
    let n_vocab = one.n_vocab();
    let want = run(&mut one, n_vocab);
    for batch in [64, 7] {
        let got = run(&mut load(&gpu, &source, 256, batch), n_vocab);
        for (step, (g, w)) in got.iter().zip(&want).enumerate() {
            let err = max_abs(g, w);
            assert!(err < 1e-3, "chunks of {batch}, step {step}: {err}");
        }
    }
}

/// The per-layer table read from the file by rows, and the same table on the GPU: the same logits.
#[test]
fn random_gemma4_per_layer_table_off_and_on_the_gpu_agree() {
    let Some(gpu) = gpu() else { return };
    for record in golden()["records"].as_array().unwrap() {
        let source = FileSource::open(path(record)).unwrap();
        let mut off = load(&gpu, &source, 256, 16);
        let on = LoadOptions {
            n_ctx: 256,
            batch: Some(16),
            per_layer_on_gpu: true,
            ..Default::default()
        };
        let mut on = load_with(&gpu, &source, on).unwrap();
        let n_vocab = off.n_vocab();
        let (a, b) = (run(&mut off, n_vocab), run(&mut on, n_vocab));
        for (step, (a, b)) in a.iter().zip(&b).enumerate() {
            let err = max_abs(a, b);
            assert!(err < 1e-4, "{}: step {step}: {err}", record["file"]);
        }
        // From memory, which cannot be read again later: the table goes to the GPU.
        let bytes = std::fs::read(path(record)).unwrap();
        let memory = MemorySource {
            bytes,
            name: "in memory".into(),
        };
        let mut in_memory = load(&gpu, &memory, 256, 16);
        let c = run(&mut in_memory, n_vocab);
        assert!(max_abs(&a[4], &c[4]) < 1e-4);
    }
}

/// A longer context holds more cache, and only for the layers with a cache of their own: in the
/// small file 4 of 6 layers, each 2 x 64 floats of k and v per position.
#[test]
fn random_gemma4_shared_layers_hold_no_cache() {
    let Some(gpu) = gpu() else { return };
    let record = &golden()["records"][0];
    let source = FileSource::open(path(record)).unwrap();
    let held = |n_ctx: u32| {
        let before = gpu.memory().buffer_bytes;
        let engine = load(&gpu, &source, n_ctx, 16);
        let after = gpu.memory().buffer_bytes;
        drop(engine);
        after - before
    };
    let (short, long) = (held(512), held(1024));
    let per_position = (long - short) / 512;
    assert_eq!(per_position, 4 * 2 * 64 * 4, "bytes of cache per position");
}

/// `wick perplexity`'s method over tests/data/perplexity.txt against llama.cpp's and the f64
/// reference's (tests/goldens/make_random_perplexity.py gemma4).
#[test]
fn random_gemma4_perplexity_matches_references() {
    let Some(gpu) = gpu() else { return };
    let golden = include_str!("goldens/random-gemma4-perplexity.json");
    check_text_perplexity(&gpu, &serde_json::from_str(golden).unwrap());
}

#[test]
fn random_gemma4_bad_files_are_refused() {
    let Some(gpu) = gpu() else { return };
    let file = path(&golden()["records"][0]);
    let refused = |source: MemorySource, want: &str| {
        let err = match load_with(&gpu, &source, LoadOptions::default()) {
            Ok(_) => panic!("loaded; expected an error naming {want:?}"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(want), "{err:?} does not name {want:?}");
    };
    let flags = |n: usize| Value::Array((0..n).map(|i| Value::Bool(i % 2 == 0)).collect());
    refused(
        variant(&file, |m, _| {
            set(m, "gemma4.attention.sliding_window_pattern", flags(5))
        }),
        "gemma4.attention.sliding_window_pattern: 5 flags for 6 layers",
    );
    refused(
        variant(&file, |m, _| {
            set(m, "gemma4.embedding_length_per_layer_input", Value::U32(16))
        }),
        "per_layer_token_embd.weight",
    );
    refused(
        variant(&file, |m, _| set(m, "gemma4.expert_count", Value::U32(8))),
        "mixture-of-experts",
    );
    refused(
        variant(&file, |m, _| {
            set(m, "gemma4.attention.shared_kv_layers", Value::U32(5))
        }),
        "shared_kv_layers",
    );
    refused(
        variant(&file, |_, t| {
            t.retain(|(s, _)| s.name != "blk.2.proj.weight")
        }),
        "blk.2.proj.weight",
    );
}

/// Gemma 4's template writes BOS itself, and its tokenizer adds one: the prompt starts with one BOS, as
/// llama.cpp's does, then the system turn; a greedy chat reply comes out and ends at the turn's end.
#[test]
fn random_gemma4_chat_prompt_has_one_bos() {
    let Some(gpu) = gpu() else { return };
    let file = path(&golden()["records"][0]);
    let source = FileSource::open(&file).unwrap();
    let options = LoadOptions {
        n_ctx: 512,
        ..Default::default()
    };
    let mut s = wick::session::Session::load(gpu.clone(), &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    let mut messages = vec![
        wick::chat_template::ChatMessage::new("system", "You are terse."),
        wick::chat_template::ChatMessage::new("user", "Hello!"),
    ];
    let text = s
        .chat_prompt(&messages, &wick::chat_template::Extras::default())
        .unwrap();
    assert!(
        text.starts_with("<|turn>system\nYou are terse.<turn|>\n"),
        "{text:?}"
    );
    let tokens = s.tokenize_prompt(&text);
    let bos = s.tokenizer.bos().unwrap();
    assert_eq!(tokens[0], bos);
    assert_ne!(tokens[1], bos);
    let mut sampler = wick::sampler::Sampler::new(wick::sampler::SamplerConfig::greedy());
    let reply = s
        .chat(
            &mut messages,
            &wick::chat_template::Extras::default(),
            (8, &[]),
            &mut sampler,
            wick::session::Overflow::Stop,
            &mut |_| true,
        )
        .block_on()
        .unwrap();
    assert!(reply.tokens.len() <= 8);
}

/// Several sequences in one decode step: the shared KV layers and the per-layer inputs over tokens of
/// different sequences (`check_parallel`).
#[test]
fn random_gemma4_in_parallel_sequences() {
    let Some(gpu) = gpu() else { return };
    common::random_model::check_parallel(&gpu, &golden(), TOL_F32);
}

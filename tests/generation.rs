//! The real model, SmolLM2-135M-Instruct Q4_1, decoded greedily on the GPU against two independent
//! references by the near-tie method (tests/common/fidelity.rs).
//!
//! - llama.cpp (tests/goldens/llama.cpp/, made by tests/goldens/make_generation_goldens.py): three raw
//!   prompts and four chat-templated ones. Its CPU path quantizes activations to 8 bits, so its logits
//!   sit a few tenths away from exact f32 math; the tolerance is loose.
//! - an f32 numpy forward pass over the `gguf` package's dequantized weights
//!   (tests/goldens/numpy_dense.py, goldens in tests/goldens/numpy/): the same math as Wick's kernels,
//!   so the tolerance is tight.
//!
//! And a reply under OpenAI's logit_bias against llama.cpp's under the same bias
//! (tests/goldens/make_logit_bias_golden.sh).

use crate::common;

use common::fidelity::{check_greedy, first_records, first_steps, Agreement, Tolerance};
use common::{gpu, model_path};
use pollster::FutureExt as _;
use serde_json::Value;
use wick::engine::{Engine, LoadOptions};
use wick::gguf::FileSource;
use wick::reply::Reply;
use wick::sampler::{Sampler, SamplerConfig};
use wick::session::Session;

/// llama.cpp's 8-bit activations put its logits up to about 0.9 from exact math on these prompts (at
/// logits near 28, late in a 32-token reply); Wick is within 1e-4 of exact math (the f32 reference).
const LLAMA_CPP: Tolerance = Tolerance {
    logit: 1.0,
    clear_gap: 1.0,
};

/// The same f32 math summed in another order.
const F32: Tolerance = Tolerance {
    logit: 0.02,
    clear_gap: 0.04,
};

fn engine() -> Option<Engine> {
    engine_with_batch(64)
}

/// The model with prompts read `batch` tokens per run.
fn engine_with_batch(batch: u32) -> Option<Engine> {
    let gpu = gpu()?;
    let source = FileSource::open(model_path()).unwrap();
    let options = LoadOptions {
        n_ctx: 160,
        batch: Some(batch),
        ..Default::default()
    };
    Some(
        Engine::load(gpu, &source, &options, &mut |_, _| {})
            .block_on()
            .unwrap(),
    )
}

#[test]
fn greedy_matches_llama_cpp() {
    let Some(mut engine) = engine() else { return };
    let golden: Value =
        serde_json::from_str(include_str!("goldens/llama.cpp/smollm2-q4_1-greedy.json")).unwrap();
    let mut total = Agreement::default();
    // The first 12 steps of four of the seven replies, the three raw prompts and the first chat one
    // (`WICK_FULL_REPLIES=1`: all of them, whole).
    for record in first_records(golden["records"].as_array().unwrap(), 4) {
        total.add(&check_greedy(
            &mut engine,
            &first_steps(record, 12),
            LLAMA_CPP,
        ));
    }
    eprintln!("llama.cpp: {total:?}");
    assert!(
        total.near_ties * 10 <= total.same,
        "too many near ties: {total:?}"
    );
}

#[test]
fn greedy_matches_f32_reference() {
    let Some(engine) = engine() else { return };
    check_f32_goldens(engine, usize::MAX);
}

/// Prompts in runs of 7 (chunk edges everywhere, tiles partly used) match the same f32 reference as
/// the default batch, so the batched prefill changes no numbers beyond summation order: the prompt and
/// the first 4 steps of each reply, the steps after them being decode steps as in the default batch. (A
/// token per run is the decode path every reply's steps already take.)
#[test]
fn prefill_batch_sizes_match_f32_reference() {
    let Some(engine) = engine_with_batch(7) else {
        return;
    };
    check_f32_goldens(engine, 4);
}

/// A prompt's first reply token comes from its last chunk's pass (the head on the chunk's last
/// token), not from a decode step of its own: a prompt of n tokens is ceil(n / batch) runs, and its
/// logits are those of the prompt run a token at a time through the decode plan, at lengths on both
/// sides of the chunk edges.
#[test]
fn a_prompts_last_chunk_ends_in_its_logits() {
    let (Some(mut chunked), Some(mut one)) = (engine_with_batch(7), engine_with_batch(1)) else {
        return;
    };
    let n_vocab = chunked.n_vocab();
    for n in [1u32, 6, 7, 8, 20] {
        let prompt: Vec<u32> = (0..n).map(|i| (i * 7919 + 13) % n_vocab).collect();
        chunked.rewind(0);
        one.rewind(0);
        let runs_before = chunked.stats.totals.runs;
        let got = chunked.prefill(&prompt).block_on().unwrap();
        let runs = chunked.stats.totals.runs - runs_before;
        assert_eq!(runs, n.div_ceil(7) as u64, "runs for {n} tokens");
        let want = one.prefill(&prompt).block_on().unwrap();
        let err = (got.iter().zip(&want))
            .map(|(g, w)| (g - w).abs())
            .fold(0.0f32, f32::max);
        assert!(err < F32.logit, "{n} tokens: logits {err} apart");
    }
}

/// Each f32 golden over its first `steps` steps (`WICK_FULL_REPLIES=1`: all).
fn check_f32_goldens(mut engine: Engine, steps: usize) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/goldens/numpy");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut total = Agreement::default();
    for f in files {
        let record: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        total.add(&check_greedy(
            &mut engine,
            &first_steps(&record, steps),
            F32,
        ));
    }
    eprintln!("f32 reference: {total:?}");
}

/// A greedy reply under a logit_bias is llama.cpp's under the same bias (llama-completion's
/// `--logit-bias`): " Paris" banned, "," raised, "capital" (a prompt token) lowered. The same with
/// 300 more tokens biased by 0, past what the GPU's pick holds, so the row is read back and the
/// bias applied on the CPU; and with log-probabilities, which read candidates and their sum.
#[test]
fn a_logit_bias_gives_llama_cpps_reply() {
    let Some(gpu) = gpu() else { return };
    let golden: Value = serde_json::from_str(include_str!(
        "goldens/llama.cpp/smollm2-q4_1-logit-bias.json"
    ))
    .unwrap();
    let source = FileSource::open(model_path()).unwrap();
    let options = LoadOptions {
        n_ctx: 64,
        ..Default::default()
    };
    let mut session = Session::load(gpu, &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    let prompt = session.tokenize_prompt(golden["prompt"].as_str().unwrap());
    let bias: Vec<(u32, f32)> = (golden["logit_bias"].as_object().unwrap().iter())
        .map(|(token, bias)| (token.parse().unwrap(), bias.as_f64().unwrap() as f32))
        .collect();
    let zeros: Vec<(u32, f32)> = (40_000..40_300).map(|t| (t, 0.0)).collect();
    let max_tokens = golden["max_tokens"].as_u64().unwrap() as usize;
    for (label, logit_bias, log_probs) in [
        ("on the GPU", bias.clone(), None),
        ("on the CPU", [bias.clone(), zeros].concat(), None),
        ("with log-probabilities", bias.clone(), Some(1)),
    ] {
        let mut sampler = Sampler::new(SamplerConfig {
            logit_bias,
            ..SamplerConfig::greedy()
        });
        sampler.log_probs = log_probs;
        let c = session
            .complete(
                &prompt,
                Reply::new(max_tokens, &[]),
                &mut sampler,
                &mut |_| true,
            )
            .block_on()
            .unwrap();
        assert_eq!(c.text, golden["reply"].as_str().unwrap(), "{label}");
    }
}

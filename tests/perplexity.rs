//! `wick perplexity`'s method against llama-perplexity's, computed over llama.cpp's logits
//! (tests/goldens/make_perplexity_golden.py, tests/goldens/smollm2-perplexity.json) on the same file and
//! text: within 0.5%, over the first two chunks of 128 tokens and over the whole text. And the batched
//! scoring that perplexity runs on against one decode step per token with its logits read back.

use crate::common;

use common::{gpu, model_path, text_perplexity};
use pollster::FutureExt as _;
use serde_json::Value;
use wick::engine::LoadOptions;
use wick::gguf::FileSource;
use wick::session::Session;

fn check(chunks: Option<usize>) {
    let Some(gpu) = gpu() else { return };
    let golden: Value =
        serde_json::from_str(include_str!("goldens/smollm2-perplexity.json")).unwrap();
    let n_ctx = golden["n_ctx"].as_u64().unwrap() as u32;
    let record = golden["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["model"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
                && chunks.is_none_or(|c| r["chunks"].as_u64() == Some(c as u64))
                && (chunks.is_some() || r["chunks"].as_u64().unwrap() > 2)
        })
        .expect("a golden for this run");
    let source = FileSource::open(model_path()).unwrap();
    let result = text_perplexity(gpu, &source, n_ctx, chunks);
    let want = record["ppl"].as_f64().unwrap();
    let diff = result.value() / want - 1.0;
    eprintln!(
        "PPL {:.4}, llama.cpp {want:.4} ({:+.2}%), per chunk {:?}",
        result.value(),
        diff * 100.0,
        result.per_chunk
    );
    assert_eq!(
        result.text_tokens as u64,
        record["n_tokens"].as_u64().unwrap()
    );
    assert_eq!(
        result.scored_tokens as u64,
        record["scored_tokens"].as_u64().unwrap()
    );
    assert!(diff.abs() < 0.005, "{:+.2}% from llama.cpp", diff * 100.0);
}

#[test]
fn perplexity_of_two_chunks_matches_llama_cpp() {
    check(Some(2));
}

#[test]
#[ignore = "the whole text, 1,408 tokens: about 8 minutes on lavapipe"]
fn perplexity_of_the_whole_text_matches_llama_cpp() {
    check(None);
}

/// `Engine::log_probs` through the scoring plan (chunks of 48 tokens: runs of 48 and a short one,
/// each scored token's successor in the run or after it) against decode steps with the logits read
/// back and reduced on the CPU in f64, over 60 tokens of the text after a prompt of 20.
#[test]
fn batched_scoring_equals_one_token_steps() {
    let Some(gpu) = gpu() else { return };
    let source = FileSource::open(model_path()).unwrap();
    let options = LoadOptions {
        n_ctx: 128,
        batch: Some(48),
        scoring: true,
        ..Default::default()
    };
    let mut session = Session::load(gpu, &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    let tokens = session
        .tokenizer
        .encode(include_str!("data/perplexity.txt"), false);
    let (prompt, scored, next) = (&tokens[..20], &tokens[20..80], tokens[80]);
    let engine = &mut session.engine;
    engine.feed(prompt).block_on().unwrap();
    let batched = engine.log_probs(scored, next).block_on().unwrap();
    engine.rewind(0);
    engine.feed(prompt).block_on().unwrap();
    let successors = scored.iter().skip(1).chain([&next]);
    let mut worst = 0f64;
    let (mut nll_batched, mut nll_steps) = (0.0, 0.0);
    for ((&t, &s), &b) in scored.iter().zip(successors).zip(&batched) {
        let logits = engine.step(t, true).block_on().unwrap().unwrap();
        let want = wick::ops::log_prob::reference(&logits, s as usize);
        worst = worst.max((b - want).abs());
        nll_batched -= b;
        nll_steps -= want;
    }
    assert_eq!(batched.len(), scored.len());
    let ppl = |nll: f64| (nll / scored.len() as f64).exp();
    let rel = ppl(nll_batched) / ppl(nll_steps) - 1.0;
    eprintln!("worst token {worst:.2e}, perplexity {rel:+.2e} relative");
    assert!(worst < 2e-3, "a token's log-probability is {worst} off");
    assert!(rel.abs() < 1e-4, "perplexity {rel:+.2e} relative");
}

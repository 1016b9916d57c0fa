//! `wick perplexity`'s method against llama-perplexity's, computed over llama.cpp's logits
//! (tests/goldens/make_perplexity_golden.py, tests/goldens/smollm2-perplexity.json) on the same file and
//! text: within 0.5%. CI scores the first two chunks of 128 tokens; the whole text is
//! `cargo test --release --test perplexity -- --ignored`.

mod common;

use common::{gpu, model_path, options};
use pollster::FutureExt as _;
use serde_json::Value;
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
    let mut session = Session::load(gpu, &source, &options(n_ctx), &mut |_, _| {})
        .block_on()
        .unwrap();
    let text = include_str!("data/perplexity.txt");
    let result = wick::perplexity::perplexity(
        &mut session.engine,
        &session.tokenizer,
        text,
        chunks,
        &mut |_, _| {},
    )
    .block_on()
    .unwrap();
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
#[ignore = "the whole text: about 20 minutes on lavapipe"]
fn perplexity_of_the_whole_text_matches_llama_cpp() {
    check(None);
}

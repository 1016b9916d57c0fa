//! A reply's reasoning read apart from its answer where harmony's markers are control tokens, as in
//! gpt-oss's vocabulary: the random gpt-oss file with seven of its tokens renamed to the markers and
//! made control tokens. The decoder hides control tokens from text but must show these to the reply's
//! splitter; `<|return|>` still ends the reply.

mod common;

use common::edit_gguf;
use pollster::FutureExt as _;
use std::path::Path;
use wick::gguf::{read_header, Value};
use wick::reasoning::{Channels, Format};
use wick::reply::Reply;
use wick::sampler::{Sampler, SamplerConfig};
use wick::session::FinishReason;
use wick::tokenizer::Tokenizer;

const MARKERS: [&str; 7] = [
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|constrain|>",
];
const CONTROL: i32 = 3;

/// The random gpt-oss file's tokenizer, the markers in place of the tokens before its last (BOS/EOS).
fn harmony_tokenizer() -> Tokenizer {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/random-gpt-oss-q8_0.gguf");
    let source = edit_gguf::variant(&file, |metadata, _| {
        for (key, value) in metadata.iter_mut() {
            let Value::Array(items) = value else { continue };
            let first = items.len() - 1 - MARKERS.len();
            match key.as_str() {
                "tokenizer.ggml.tokens" => {
                    for (i, m) in MARKERS.iter().enumerate() {
                        items[first + i] = Value::String(m.to_string());
                    }
                }
                "tokenizer.ggml.token_type" => {
                    for item in &mut items[first..first + MARKERS.len()] {
                        *item = Value::I32(CONTROL);
                    }
                }
                _ => {}
            }
        }
    });
    let header = read_header(&source).block_on().unwrap();
    Tokenizer::from_gguf(&header).unwrap()
}

/// What a reply said: its reasoning and answer, and the same of its pieces joined.
struct Said {
    reasoning: String,
    answer: String,
    streamed: (String, String),
    finish: FinishReason,
}

/// Runs `ids` through a reply (split by harmony after `prompt` where `split`).
fn reply(tokenizer: &Tokenizer, ids: &[u32], split: Option<&str>) -> Said {
    let mut reply = Reply::new(100, &[]);
    if let Some(prompt) = split {
        reply = reply.with_reasoning(Channels::after(Format::Harmony, prompt), tokenizer);
    }
    let sampler = Sampler::new(SamplerConfig::greedy());
    let mut streamed = (String::new(), String::new());
    let mut on_text = |piece: wick::reply::Piece| {
        streamed.0 += piece.reasoning;
        streamed.1 += piece.text;
        true
    };
    let finish = ids
        .iter()
        .find_map(|&id| reply.push(tokenizer, (id, None), &sampler, true, &mut on_text))
        .unwrap_or(FinishReason::Length);
    let c = reply.finish(finish, tokenizer, &mut on_text);
    Said {
        reasoning: c.reasoning,
        answer: c.text,
        streamed,
        finish,
    }
}

#[test]
fn harmony_markers_that_are_control_tokens_split_the_reply() {
    let tokenizer = harmony_tokenizer();
    let marker = |m: &str| tokenizer.token_id(m).expect("a marker token");
    let text = |t: &str| tokenizer.encode(t, false);
    let ids: Vec<u32> = [
        vec![marker("<|channel|>")],
        text("analysis"),
        vec![marker("<|message|>")],
        text("Adding two and two."),
        vec![marker("<|end|>"), marker("<|start|>")],
        text("assistant"),
        vec![marker("<|channel|>")],
        text("final"),
        vec![marker("<|message|>")],
        text("Four."),
        vec![marker("<|return|>")],
        text("never read"),
    ]
    .concat();
    let prompt = "<|start|>user<|message|>2+2?<|end|><|start|>assistant";
    let said = reply(&tokenizer, &ids, Some(prompt));
    let split = (said.reasoning.as_str(), said.answer.as_str());
    assert_eq!(split, ("Adding two and two.", "Four."));
    assert_eq!(said.finish, FinishReason::Stop, "<|return|> ends the reply");
    assert_eq!(said.streamed, (said.reasoning, said.answer));

    // Without the split, the markers stay hidden as control tokens: the text runs together.
    let plain = reply(&tokenizer, &ids, None);
    assert_eq!(plain.reasoning, "");
    assert_eq!(
        plain.answer,
        "analysisAdding two and two.assistantfinalFour."
    );
}

//! Log-probabilities in OpenAI's API: what a request asks for (`logprobs`, `top_logprobs`), and a
//! reply's `logprobs` in the chat shape and in the text completions' older one.

use super::{invalid, InvalidRequest};
use crate::sampler::{TokenLogProb, MAX_TOP_LOG_PROBS};
use crate::tokenizer::Tokenizer;
use std::collections::BTreeMap;

/// The alternatives a request asks to see with each token's log-probability, if it asks for
/// log-probabilities at all: a chat request's `logprobs: true` with `top_logprobs` (0 to 20), or a
/// text completion's `logprobs: N` (the alternatives; OpenAI allows up to 5, Wick 20).
pub(super) fn asked(
    other: &BTreeMap<String, serde_json::Value>,
) -> Result<Option<usize>, InvalidRequest> {
    use serde_json::Value;
    let count = |field: &'static str| -> Result<Option<usize>, InvalidRequest> {
        match other.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n as usize <= MAX_TOP_LOG_PROBS => Ok(Some(n as usize)),
                _ => Err(invalid(
                    format!("{field} must be an integer from 0 to {MAX_TOP_LOG_PROBS}"),
                    field,
                )),
            },
        }
    };
    let top = count("top_logprobs")?;
    match other.get("logprobs") {
        Some(Value::Bool(true)) => Ok(Some(top.unwrap_or(0))),
        None | Some(Value::Null) | Some(Value::Bool(false)) => match top {
            Some(n) if n > 0 => Err(invalid("top_logprobs needs logprobs: true", "top_logprobs")),
            _ => Ok(None),
        },
        Some(_) => count("logprobs"),
    }
}

/// A chat choice's `logprobs` as OpenAI gives them: `{ content: [{ token, logprob, bytes,
/// top_logprobs: [{ token, logprob, bytes }] }], refusal: null }`, a token's text its bytes read as
/// UTF-8 (a piece of a character shows as U+FFFD; `bytes` has it whole).
pub fn chat(tokenizer: &Tokenizer, probs: &[TokenLogProb]) -> serde_json::Value {
    let entry = |id: u32, log_prob: f32| {
        let bytes = tokenizer.token_piece(id);
        serde_json::json!({
            "token": String::from_utf8_lossy(bytes), "logprob": log_prob, "bytes": bytes,
        })
    };
    let content: Vec<serde_json::Value> = probs
        .iter()
        .map(|p| {
            let mut e = entry(p.token, p.log_prob);
            e["top_logprobs"] = p.top.iter().map(|&(id, lp)| entry(id, lp)).collect();
            e
        })
        .collect();
    serde_json::json!({ "content": content, "refusal": null })
}

/// A text completion's `logprobs` in OpenAI's older shape: `{ tokens, token_logprobs, top_logprobs:
/// [{ token: logprob }], text_offset }`, each offset in characters from the start of the reply's
/// text, the first at `offset`, which moves past these tokens (a streamed reply's next piece starts
/// there).
pub fn text(
    tokenizer: &Tokenizer,
    probs: &[TokenLogProb],
    offset: &mut usize,
) -> serde_json::Value {
    let text = |id: u32| String::from_utf8_lossy(tokenizer.token_piece(id)).into_owned();
    let mut offsets = Vec::with_capacity(probs.len());
    for p in probs {
        offsets.push(*offset);
        *offset += text(p.token).chars().count();
    }
    serde_json::json!({
        "tokens": probs.iter().map(|p| text(p.token)).collect::<Vec<_>>(),
        "token_logprobs": probs.iter().map(|p| p.log_prob).collect::<Vec<_>>(),
        "top_logprobs": probs.iter().map(|p| {
            p.top.iter().map(|&(id, lp)| (text(id), serde_json::json!(lp))).collect::<serde_json::Map<_, _>>()
        }).collect::<Vec<_>>(),
        "text_offset": offsets,
    })
}

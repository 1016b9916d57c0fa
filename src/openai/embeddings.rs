//! OpenAI's embeddings request and answer (`/v1/embeddings`, the package's `embeddings.create`,
//! `wick embed`), and the work between them: each input tokenized, checked, embedded and shaped.

use super::{invalid, InvalidRequest};
use crate::session::Session;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
pub struct EmbeddingRequest {
    pub input: EmbeddingInput,
    /// "float" (the default) or "base64": each vector's f32 values, little-endian, in base64.
    pub encoding_format: Option<String>,
    /// Keep the first this many values, normalized again (Matryoshka-trained models, such as
    /// Qwen3-Embedding and EmbeddingGemma, hold up when cut so).
    pub dimensions: Option<usize>,
    /// Cut an input longer than the context to its first tokens rather than refuse it (not one of
    /// OpenAI's fields: its API refuses such inputs, as Wick does by default).
    #[serde(default)]
    pub truncate: bool,
}

/// `input`: a text, texts, a list of token ids, or lists of them.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum EmbeddingInput {
    Text(String),
    Texts(Vec<String>),
    Tokens(Vec<u32>),
    TokenLists(Vec<Vec<u32>>),
}

/// Why embedding failed: the request, or the engine under it.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(transparent)]
    Invalid(#[from] InvalidRequest),
    #[error(transparent)]
    Engine(#[from] crate::Error),
}

/// Inputs in one request at most.
pub const MAX_INPUTS: usize = 2048;

/// Embeds every input of `request` in order and answers as OpenAI does:
/// `{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}`.
pub async fn respond(
    session: &mut Session,
    request: &EmbeddingRequest,
    model: &str,
) -> Result<Value, EmbedError> {
    let base64 = match request.encoding_format.as_deref() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            let message = format!("encoding_format {other:?}: Wick writes \"float\" or \"base64\"");
            return Err(invalid(message, "encoding_format").into());
        }
    };
    let Some(width) = session.engine.embedding_width() else {
        let message = "this model makes no embeddings: its file names no pooling (a chat model); \
                       load it with one named (mean, cls or last) to embed with it";
        return Err(invalid(message, "model").into());
    };
    if let Some(d) = request.dimensions {
        if d == 0 || d > width {
            let message = format!("dimensions must be 1 to {width} for this model");
            return Err(invalid(message, "dimensions").into());
        }
    }
    let mut inputs = token_lists(session, &request.input)?;
    // Every input is checked before any runs.
    let (n_ctx, n_vocab) = (session.engine.n_ctx() as usize, session.engine.n_vocab());
    for (index, tokens) in inputs.iter_mut().enumerate() {
        if tokens.is_empty() {
            return Err(invalid(format!("input {index} is empty"), "input").into());
        }
        if let Some(&t) = tokens.iter().find(|&&t| t >= n_vocab) {
            let message =
                format!("input {index}: token id {t} is outside the vocabulary of {n_vocab}");
            return Err(invalid(message, "input").into());
        }
        if tokens.len() > n_ctx {
            if !request.truncate {
                let message = format!(
                    "input {index} is {} tokens; this model's context is {n_ctx} tokens \
                     (\"truncate\": true cuts it to fit)",
                    tokens.len()
                );
                return Err(invalid(message, "input").into());
            }
            tokens.truncate(n_ctx);
        }
    }
    let lists: Vec<&[u32]> = inputs.iter().map(Vec::as_slice).collect();
    let vectors = session.embed(&lists).await?;
    let mut data = Vec::with_capacity(inputs.len());
    for (index, mut v) in vectors.into_iter().enumerate() {
        if let Some(d) = request.dimensions {
            v.truncate(d);
            crate::embeddings::normalize(&mut v);
        }
        let embedding = match base64 {
            true => Value::String(base64_f32(&v)),
            false => json!(v),
        };
        data.push(json!({ "object": "embedding", "index": index, "embedding": embedding }));
    }
    let prompt_tokens: usize = inputs.iter().map(Vec::len).sum();
    Ok(json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": { "prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens },
    }))
}

/// A completion asked of an embedding model (one whose file names a pooling), refused: it was
/// trained to make vectors, not text. A chat model loaded with a pooling named still answers both.
pub fn refuse_completion(session: &Session) -> Result<(), InvalidRequest> {
    match crate::embeddings::Pooling::of_model(&session.engine.header) {
        Ok(Some(pooling)) => Err(invalid(
            format!(
                "this is an embedding model (its file pools by {}): it answers embeddings, not completions",
                pooling.name()
            ),
            "model",
        )),
        _ => Ok(()),
    }
}

/// The request's inputs as token lists: texts tokenized as the model's embeddings want them
/// (`Session::tokenize_input`), token ids as given.
fn token_lists(session: &Session, input: &EmbeddingInput) -> Result<Vec<Vec<u32>>, InvalidRequest> {
    let texts: &[String] = match input {
        EmbeddingInput::Text(text) => std::slice::from_ref(text),
        EmbeddingInput::Texts(texts) => texts,
        _ => &[],
    };
    if let Some(index) = texts.iter().position(|t| t.is_empty()) {
        return Err(invalid(format!("input {index} is empty"), "input"));
    }
    let lists = match input {
        EmbeddingInput::Text(text) => vec![session.tokenize_input(text)],
        EmbeddingInput::Texts(texts) => texts.iter().map(|t| session.tokenize_input(t)).collect(),
        EmbeddingInput::Tokens(ids) => vec![ids.clone()],
        EmbeddingInput::TokenLists(lists) => lists.clone(),
    };
    match lists.len() {
        0 => Err(invalid("input must not be empty", "input")),
        n if n > MAX_INPUTS => Err(invalid(
            format!("{n} inputs; at most {MAX_INPUTS} in one request"),
            "input",
        )),
        _ => Ok(lists),
    }
}

/// The values as little-endian f32 bytes in standard base64 (with padding), as OpenAI's
/// `encoding_format: "base64"` sends them.
pub fn base64_f32(values: &[f32]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = (group[0] as u32) << 16
            | (*group.get(1).unwrap_or(&0) as u32) << 8
            | *group.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            match i <= group.len() {
                true => out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char),
                false => out.push('='),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// Against Python's base64.b64encode(struct.pack('<3f', ...)).
    #[test]
    fn base64_matches_pythons() {
        assert_eq!(super::base64_f32(&[1.0, -2.5, 0.1]), "AACAPwAAIMDNzMw9");
        assert_eq!(super::base64_f32(&[1.0, -2.5]), "AACAPwAAIMA=");
        assert_eq!(super::base64_f32(&[]), "");
    }
}

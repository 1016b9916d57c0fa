//! Tokenizers from GGUF metadata: gpt2-style byte-level BPE with the pre-tokenizer that
//! `tokenizer.ggml.pre` names, special tokens, and streaming decoding.

mod bpe;
mod pretokenize;
mod stream;

pub use stream::StreamDecoder;

use crate::gguf::Header;
use std::collections::HashMap;

#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("tokenizer model {0:?} is not supported (Wick reads gpt2 BPE)")]
    UnsupportedModel(String),
    #[error("pre-tokenizer {0:?} is not supported")]
    UnsupportedPre(String),
    #[error("tokenizer metadata {key}: {problem}")]
    Bad { key: &'static str, problem: String },
}

/// GGUF token types.
const TYPE_CONTROL: i64 = 3;
const TYPE_USER_DEFINED: i64 = 4;

/// Texts that end generation wherever a model declares them as tokens.
const END_OF_GENERATION: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "<|eom_id|>",
    "<｜end▁of▁sentence｜>",
];

pub struct Tokenizer {
    /// Each token's text as stored (byte-level encoded).
    tokens: Vec<String>,
    /// Each token's bytes once decoded.
    pieces: Vec<Vec<u8>>,
    ids: HashMap<String, u32>,
    bpe: bpe::Bpe,
    pre: pretokenize::PreTokenizer,
    /// Control and user-defined tokens, longest first, with whether they are control tokens.
    specials: Vec<(String, u32, bool)>,
    bos: Option<u32>,
    eos: Option<u32>,
    add_bos: bool,
    end_of_generation: Vec<u32>,
}

impl Tokenizer {
    pub fn from_gguf(h: &Header) -> Result<Tokenizer, TokenizerError> {
        let model = h.get_str("tokenizer.ggml.model").unwrap_or("(missing)");
        if model != "gpt2" {
            return Err(TokenizerError::UnsupportedModel(model.to_string()));
        }
        let bad = |key, problem: &str| TokenizerError::Bad {
            key,
            problem: problem.to_string(),
        };
        let tokens: Vec<String> = h
            .get_array("tokenizer.ggml.tokens")
            .ok_or_else(|| bad("tokenizer.ggml.tokens", "missing"))?
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("tokenizer.ggml.tokens", "not all strings"))?;
        let merges: Vec<&str> = h
            .get_array("tokenizer.ggml.merges")
            .ok_or_else(|| bad("tokenizer.ggml.merges", "missing"))?
            .iter()
            .map(|v| v.as_str())
            .collect::<Option<_>>()
            .ok_or_else(|| bad("tokenizer.ggml.merges", "not all strings"))?;
        let types: Vec<i64> = match h.get_array("tokenizer.ggml.token_type") {
            Some(a) => a.iter().map(|v| v.as_i64().unwrap_or(1)).collect(),
            None => vec![1; tokens.len()],
        };
        let n = tokens.len() as u32;
        let id_key = |key: &str| h.get_u64(key).map(|v| v as u32).filter(|&v| v < n);
        let pre =
            pretokenize::PreTokenizer::named(h.get_str("tokenizer.ggml.pre").unwrap_or("default"))?;
        let ids: HashMap<String, u32> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        let pieces = tokens.iter().map(|t| bpe::decode_bytes(t)).collect();
        let mut specials: Vec<(String, u32, bool)> = tokens
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                matches!(
                    types.get(*i),
                    Some(&TYPE_CONTROL) | Some(&TYPE_USER_DEFINED)
                )
            })
            .map(|(i, t)| (t.clone(), i as u32, types[i] == TYPE_CONTROL))
            .filter(|(t, _, _)| !t.is_empty())
            .collect();
        specials.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        let eos = id_key("tokenizer.ggml.eos_token_id");
        let mut end_of_generation: Vec<u32> = [
            eos,
            id_key("tokenizer.ggml.eot_token_id"),
            id_key("tokenizer.ggml.eom_token_id"),
        ]
        .into_iter()
        .flatten()
        .collect();
        end_of_generation.extend(
            END_OF_GENERATION
                .iter()
                .filter_map(|t| ids.get(*t).copied()),
        );
        Ok(Tokenizer {
            bpe: bpe::Bpe::new(&merges),
            tokens,
            pieces,
            ids,
            pre,
            specials,
            bos: id_key("tokenizer.ggml.bos_token_id"),
            eos,
            add_bos: h.get_bool("tokenizer.ggml.add_bos_token").unwrap_or(false),
            end_of_generation,
        })
    }

    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    pub fn bos(&self) -> Option<u32> {
        self.bos
    }

    pub fn eos(&self) -> Option<u32> {
        self.eos
    }

    pub fn add_bos(&self) -> bool {
        self.add_bos
    }

    pub fn is_end_of_generation(&self, id: u32) -> bool {
        self.end_of_generation.contains(&id)
    }

    /// The bytes a token stands for.
    pub fn token_piece(&self, id: u32) -> &[u8] {
        self.pieces.get(id as usize).map_or(&[], |p| p)
    }

    /// Token ids of `text`, without BOS. With `parse_special`, control tokens written in the text become
    /// their ids; user-defined tokens always do.
    pub fn encode(&self, text: &str, parse_special: bool) -> Vec<u32> {
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            // The earliest special token in the rest of the text (the longest where two start together).
            let found = self
                .specials
                .iter()
                .filter(|(_, _, control)| parse_special || !control)
                .filter_map(|(t, id, _)| rest.find(t.as_str()).map(|at| (at, t.len(), *id)))
                .min_by_key(|&(at, len, _)| (at, usize::MAX - len));
            let (plain, special) = match found {
                Some((at, len, id)) => (&rest[..at], Some((id, at + len))),
                None => (rest, None),
            };
            for word in self.pre.split(plain) {
                self.bpe.encode_word(word, &self.ids, &mut out);
            }
            match special {
                Some((id, end)) => {
                    out.push(id);
                    rest = &rest[end..];
                }
                None => break,
            }
        }
        out
    }

    /// The text of a sequence of tokens (invalid UTF-8 replaced).
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids
            .iter()
            .flat_map(|&i| self.token_piece(i).to_vec())
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

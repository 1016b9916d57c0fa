//! The vocabulary as a GGUF file stores it: token texts, types and scores, the special-token ids, and
//! which tokens end a generation.

use std::collections::HashMap;

use super::{bpe, TokenKind, TokenizerError};
use crate::gguf::{Header, Value};

pub(crate) struct Vocab {
    pub texts: Vec<String>,
    pub kinds: Vec<TokenKind>,
    pub scores: Vec<f32>,
    ids: HashMap<String, u32>,
    /// The bytes each token stands for (see `Tokenizer::token_piece`).
    pub pieces: Vec<Vec<u8>>,
    pub unk: Option<u32>,
    /// The longest token's text, in bytes.
    pub max_token_len: usize,
    /// `<0xNN>` tokens by byte (SentencePiece byte fallback).
    bytes: [Option<u32>; 256],
}

/// How a token's text maps to bytes.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Encoding {
    /// gpt2 byte-level: every character of a normal token stands for one byte.
    ByteLevel,
    /// SentencePiece: `▁` is a space; byte tokens are `<0xNN>`.
    SentencePiece,
}

impl Vocab {
    pub fn from_gguf(h: &Header, encoding: Encoding) -> Result<Vocab, TokenizerError> {
        let tokens = string_array(h, "tokenizer.ggml.tokens")?
            .ok_or(TokenizerError::Missing("tokenizer.ggml.tokens"))?;
        let n = tokens.len();
        if n == 0 || n > u32::MAX as usize {
            return Err(malformed("tokenizer.ggml.tokens", format!("{n} tokens")));
        }
        let kinds = match h.get("tokenizer.ggml.token_type") {
            None => vec![TokenKind::Normal; n],
            Some(v) => {
                let a = numbers(v, n, "tokenizer.ggml.token_type")?;
                a.iter().map(|&t| TokenKind::from_gguf(t as i64)).collect()
            }
        };
        let scores = match h.get("tokenizer.ggml.scores") {
            None => vec![0.0; n],
            Some(v) => numbers(v, n, "tokenizer.ggml.scores")?
                .iter()
                .map(|&s| s as f32)
                .collect(),
        };
        let mut texts = Vec::with_capacity(n);
        let mut ids = HashMap::with_capacity(n);
        for (i, t) in tokens.into_iter().enumerate() {
            // An empty token could never be matched; give it a placeholder name as llama.cpp does.
            let t = if t.is_empty() {
                format!("[EMPTY_{i}]")
            } else {
                t.to_string()
            };
            if ids.insert(t.clone(), i as u32).is_some() {
                return Err(malformed(
                    "tokenizer.ggml.tokens",
                    format!("token {t:?} appears twice"),
                ));
            }
            texts.push(t);
        }
        let texts_max = texts.iter().map(String::len).max().unwrap_or(0);
        let mut bytes = [None; 256];
        for b in 0..=255u8 {
            bytes[b as usize] = ids.get(&format!("<0x{b:02X}>")).copied();
        }
        let mut v = Vocab {
            texts,
            kinds,
            scores,
            ids,
            pieces: Vec::new(),
            unk: None,
            max_token_len: texts_max,
            bytes,
        };
        v.pieces = (0..n).map(|i| v.decode_piece(i, encoding)).collect();
        Ok(v)
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn id_of(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    pub fn score(&self, id: u32) -> f32 {
        self.scores[id as usize]
    }

    /// The token for one raw byte: `<0xNN>`, else the byte itself as a one-character token.
    pub fn byte_token(&self, b: u8) -> Option<u32> {
        self.bytes[b as usize]
            .or_else(|| std::str::from_utf8(&[b]).ok().and_then(|s| self.id_of(s)))
    }

    fn decode_piece(&self, i: usize, encoding: Encoding) -> Vec<u8> {
        let text = &self.texts[i];
        match self.kinds[i] {
            TokenKind::Control | TokenKind::Unknown | TokenKind::UserDefined => {
                text.as_bytes().to_vec()
            }
            TokenKind::Byte => match text.strip_prefix("<0x").and_then(|s| s.strip_suffix('>')) {
                Some(hex) => u8::from_str_radix(hex, 16)
                    .map(|b| vec![b])
                    .unwrap_or_default(),
                // Some byte-level vocabularies mark their 256 byte characters as byte tokens.
                None if encoding == Encoding::ByteLevel => byte_level_bytes(text),
                None => text.as_bytes().to_vec(),
            },
            TokenKind::Normal => match encoding {
                Encoding::ByteLevel => byte_level_bytes(text),
                Encoding::SentencePiece => text.replace('\u{2581}', " ").into_bytes(),
            },
            TokenKind::Unused | TokenKind::Undefined => Vec::new(),
        }
    }
}

/// The bytes a byte-level token's characters stand for. A character outside the 256 (which a well-formed
/// vocabulary never has) stands for its own UTF-8.
fn byte_level_bytes(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match bpe::char_to_byte(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

/// The special-token ids a file names, and the set of tokens that end a generation.
pub(crate) struct Specials {
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    pub eot: Option<u32>,
    pub eom: Option<u32>,
    pub eog: Vec<u32>,
}

/// Texts that mark a token as ending a generation, whatever the file's metadata says.
const EOG_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
];
/// End-of-turn tokens, for files that do not name one.
const EOT_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<｜end▁of▁sentence｜>",
    "<end_of_utterance>",
];
/// Fill-in-the-middle pad, repository and file-separator tokens: they also end a generation.
const FIM_PAD_TEXTS: &[&str] = &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"];
const FIM_REP_TEXTS: &[&str] = &[
    "<|fim_repo|>",
    "<|repo_name|>",
    "<fim-repo>",
    "<REPO>",
    "<reponame>",
];
const FIM_SEP_TEXTS: &[&str] = &["<|file_sep|>"];

impl Specials {
    /// Reads the ids from metadata (falling back to `defaults` = (bos, eos)), works out the end-of-generation
    /// set, and marks end-of-generation tokens as control tokens (so they parse as special in text).
    pub fn from_gguf(
        h: &Header,
        vocab: &mut Vocab,
        defaults: (Option<u32>, Option<u32>),
    ) -> Specials {
        let n = vocab.len() as u64;
        // An id outside the vocabulary is ignored, as if absent.
        let id = |key: &str| h.get_u64(key).filter(|&i| i < n).map(|i| i as u32);
        let in_range = |d: Option<u32>| d.filter(|&i| (i as u64) < n);
        let bos = id("tokenizer.ggml.bos_token_id").or(in_range(defaults.0));
        let eos = id("tokenizer.ggml.eos_token_id").or(in_range(defaults.1));
        vocab.unk = id("tokenizer.ggml.unknown_token_id").or_else(|| vocab.id_of("<unk>"));

        let first_of = |texts: &[&str]| texts.iter().filter_map(|t| vocab.id_of(t)).min();
        let eot = id("tokenizer.ggml.eot_token_id").or_else(|| first_of(EOT_TEXTS));
        let eom = id("tokenizer.ggml.eom_token_id").or_else(|| vocab.id_of("<|eom_id|>"));
        let fim = [
            id("tokenizer.ggml.fim_pad_token_id").or_else(|| first_of(FIM_PAD_TEXTS)),
            id("tokenizer.ggml.fim_rep_token_id").or_else(|| first_of(FIM_REP_TEXTS)),
            id("tokenizer.ggml.fim_sep_token_id").or_else(|| first_of(FIM_SEP_TEXTS)),
        ];
        let mut eog: Vec<u32> = EOG_TEXTS.iter().filter_map(|t| vocab.id_of(t)).collect();
        eog.extend(fim.into_iter().flatten());
        for &i in &eog {
            if vocab.kinds[i as usize] != TokenKind::Control {
                vocab.kinds[i as usize] = TokenKind::Control;
                vocab.pieces[i as usize] = vocab.texts[i as usize].as_bytes().to_vec();
            }
        }
        eog.extend([eos, eot, eom].into_iter().flatten());
        eog.sort_unstable();
        eog.dedup();

        // Harmony-style vocabularies end a turn with <|return|>/<|call|> (or <|calls|>/<|flush|>); there
        // <|end|> only separates messages. Where <|tool_response> or <|plamo:eos|> ends turns, </s> is an
        // ordinary token.
        let has = |t: &str| vocab.id_of(t).is_some_and(|i| eog.contains(&i));
        let drop_end = has("<|end|>")
            && ((has("<|return|>") && has("<|call|>")) || (has("<|calls|>") && has("<|flush|>")));
        let drop_s = has("</s>") && (has("<|tool_response>") || has("<|plamo:eos|>"));
        let (end, s) = (vocab.id_of("<|end|>"), vocab.id_of("</s>"));
        eog.retain(|&i| !((drop_end && Some(i) == end) || (drop_s && Some(i) == s)));
        Specials {
            bos,
            eos,
            eot,
            eom,
            eog,
        }
    }
}

/// A metadata array of strings, if present.
fn string_array<'h>(
    h: &'h Header,
    key: &'static str,
) -> Result<Option<Vec<&'h str>>, TokenizerError> {
    let Some(v) = h.get(key) else { return Ok(None) };
    let a = v
        .as_array()
        .ok_or_else(|| malformed(key, "not an array".into()))?;
    a.iter()
        .enumerate()
        .map(|(i, s)| {
            s.as_str()
                .ok_or_else(|| malformed(key, format!("element {i} is not a string")))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// A metadata array of numbers with at least `n` elements.
fn numbers(v: &Value, n: usize, key: &'static str) -> Result<Vec<f64>, TokenizerError> {
    let a = v
        .as_array()
        .ok_or_else(|| malformed(key, "not an array".into()))?;
    if a.len() < n {
        return Err(malformed(
            key,
            format!("{} entries for {n} tokens", a.len()),
        ));
    }
    a[..n]
        .iter()
        .map(|x| {
            x.as_f64()
                .ok_or_else(|| malformed(key, "holds a non-number".into()))
        })
        .collect()
}

pub(crate) fn merges(h: &Header) -> Result<Vec<&str>, TokenizerError> {
    string_array(h, "tokenizer.ggml.merges")?
        .ok_or(TokenizerError::Missing("tokenizer.ggml.merges"))
}

pub(crate) fn malformed(key: &'static str, problem: String) -> TokenizerError {
    TokenizerError::Malformed { key, problem }
}

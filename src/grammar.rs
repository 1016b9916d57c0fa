//! Constrained decoding: at each step only the tokens that keep the output inside a grammar (a JSON
//! schema, any JSON object, or a Lark grammar) may be sampled. llguidance computes each step's set of
//! allowed tokens from a trie of the model's token bytes; the sampler masks the rest out of the logits
//! before any other sampling step, and an end-of-generation token is allowed where the grammar can end.

use crate::tokenizer::{TokenKind, Tokenizer};
use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{SimpleVob, TokEnv, TokRxInfo, TokTrie, TokenizerEnv};
use llguidance::{JsonCompileOptions, Matcher, ParserFactory};
use std::sync::Arc;

/// What a reply must match.
#[derive(Clone, Debug, PartialEq)]
pub enum Grammar {
    /// Any JSON object (OpenAI's `json_object`).
    JsonObject,
    /// JSON matching this schema.
    JsonSchema(serde_json::Value),
    /// A grammar in llguidance's Lark syntax.
    Lark(String),
}

/// A grammar that cannot be used: its text does not parse, or it uses what llguidance does not take.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GrammarError(pub String);

/// The model's vocabulary as llguidance sees it, built once per model (a trie over every token).
pub struct Vocabulary {
    factory: ParserFactory,
}

impl Vocabulary {
    pub fn new(tokenizer: &Arc<Tokenizer>) -> Result<Vocabulary, GrammarError> {
        let env: TokEnv = Arc::new(TokenizerBytes::new(tokenizer.clone()));
        let mut factory =
            ParserFactory::new_simple(&env).map_err(|e| GrammarError(e.to_string()))?;
        factory.set_stderr_log_level(0);
        Ok(Vocabulary { factory })
    }
}

/// A grammar being matched, token by token.
pub struct Constraint {
    matcher: Matcher,
    /// The model's end-of-generation tokens, all allowed where the grammar lets its trie's EOS through.
    end_of_generation: Vec<u32>,
    eos: u32,
}

impl Constraint {
    pub fn new(
        vocabulary: &Vocabulary,
        tokenizer: &Tokenizer,
        grammar: &Grammar,
    ) -> Result<Constraint, GrammarError> {
        let top = match grammar {
            Grammar::JsonObject => json_schema(serde_json::json!({ "type": "object" })),
            Grammar::JsonSchema(schema) => json_schema(schema.clone()),
            Grammar::Lark(text) => TopLevelGrammar::from_lark(text.clone()),
        };
        let parser = vocabulary.factory.create_parser(top);
        let matcher = Matcher::new(parser);
        if let Some(e) = matcher.get_error() {
            return Err(GrammarError(e));
        }
        let eos = vocabulary.factory.tok_env().tok_trie().eos_token();
        Ok(Constraint {
            matcher,
            end_of_generation: tokenizer.end_of_generation_ids().to_vec(),
            eos,
        })
    }

    /// Sets the logits of the tokens the grammar does not allow next to -inf.
    pub fn mask(&mut self, logits: &mut [f32]) -> Result<(), GrammarError> {
        let bits = self.allowed_bits(logits.len() as u32)?;
        for (id, logit) in logits.iter_mut().enumerate() {
            if bits[id / 32] >> (id % 32) & 1 == 0 {
                *logit = f32::NEG_INFINITY;
            }
        }
        Ok(())
    }

    /// The tokens the grammar allows next among `n_vocab`, a bit each (id i: bit i % 32 of word
    /// i / 32): the model's end-of-generation tokens where the grammar may end, ids past the
    /// tokenizer's (a padded head) never.
    pub fn allowed_bits(&mut self, n_vocab: u32) -> Result<Vec<u32>, GrammarError> {
        let allowed = self.allowed()?;
        let mut bits = vec![0u32; n_vocab.div_ceil(32) as usize];
        let known = (allowed.len() as u32).min(n_vocab) as usize;
        let words = known / 32;
        bits[..words].copy_from_slice(&allowed.as_slice()[..words]);
        for id in words * 32..known {
            bits[id / 32] |= (allowed.is_allowed(id as u32) as u32) << (id % 32);
        }
        let end_allowed = allowed.is_allowed(self.eos);
        for &id in &self.end_of_generation {
            if id < n_vocab {
                let (word, bit) = (id as usize / 32, id % 32);
                bits[word] = (bits[word] & !(1 << bit)) | ((end_allowed as u32) << bit);
            }
        }
        Ok(bits)
    }

    fn allowed(&mut self) -> Result<SimpleVob, GrammarError> {
        self.matcher
            .compute_mask_or_eos()
            .map_err(|e| GrammarError(e.to_string()))
    }

    /// Moves the grammar past the token sampled.
    pub fn accept(&mut self, token: u32) -> Result<(), GrammarError> {
        let token = match self.end_of_generation.contains(&token) {
            true => self.eos,
            false => token,
        };
        self.matcher
            .consume_token(token)
            .map_err(|e| GrammarError(e.to_string()))
    }

    /// Takes back the last `n` tokens accepted (a speculative step's draft, walked to mask each of
    /// its rows).
    pub fn rollback(&mut self, n: usize) -> Result<(), GrammarError> {
        self.matcher
            .rollback(n)
            .map_err(|e| GrammarError(e.to_string()))
    }

    /// Whether `bits` (as `allowed_bits` gives them) allow `token`.
    pub fn allows(bits: &[u32], token: u32) -> bool {
        bits.get(token as usize / 32)
            .is_some_and(|w| w >> (token % 32) & 1 == 1)
    }

    /// Nothing more can follow: the reply is complete.
    pub fn is_finished(&self) -> bool {
        self.matcher.is_stopped()
    }
}

/// A schema's grammar with JSON written compactly.
fn json_schema(schema: serde_json::Value) -> TopLevelGrammar {
    TopLevelGrammar::from_json_schema(compact_json(schema))
}

/// The schema with llguidance's options for compact JSON (`{"a": 1, "b": [2, 3]}`) unless it sets its
/// own: with free whitespace a small model may write newlines until the token budget runs out.
pub fn compact_json(schema: serde_json::Value) -> serde_json::Value {
    json_separated(schema, (", ", ": "))
}

/// The schema with JSON written without spaces (`{"a":1,"b":[2,3]}`) unless it sets its own
/// options: as gpt-oss writes its calls' arguments.
pub fn tight_json(schema: serde_json::Value) -> serde_json::Value {
    json_separated(schema, (",", ":"))
}

/// The schema with its JSON's whitespace fixed to the (item, key) separators, unless it sets its own.
fn json_separated(mut schema: serde_json::Value, (item, key): (&str, &str)) -> serde_json::Value {
    if let Some(object) = schema.as_object_mut() {
        if !object.contains_key("x-guidance") {
            let options = JsonCompileOptions {
                whitespace_flexible: false,
                item_separator: item.into(),
                key_separator: key.into(),
                ..Default::default()
            };
            options.apply_to(&mut schema);
        }
    }
    schema
}

/// Each token's bytes, control tokens marked as special so that no grammar spells them out as text.
struct TokenizerBytes {
    trie: TokTrie,
    tokenizer: Arc<Tokenizer>,
}

impl TokenizerBytes {
    fn new(tokenizer: Arc<Tokenizer>) -> TokenizerBytes {
        let n = tokenizer.vocab_size();
        let words: Vec<Vec<u8>> = (0..n as u32)
            .map(|id| match tokenizer.token_kind(id) {
                Some(TokenKind::Normal | TokenKind::Byte | TokenKind::UserDefined) => {
                    tokenizer.token_piece(id).to_vec()
                }
                _ => {
                    let mut special = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                    special.extend_from_slice(tokenizer.token_text(id).unwrap_or("").as_bytes());
                    special
                }
            })
            .collect();
        let eos = tokenizer
            .eos()
            .or_else(|| tokenizer.end_of_generation_ids().first().copied())
            .unwrap_or(0);
        let trie = TokTrie::from(&TokRxInfo::new(n as u32, eos), &words);
        TokenizerBytes { trie, tokenizer }
    }
}

impl TokenizerEnv for TokenizerBytes {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    fn tokenize_bytes(&self, s: &[u8]) -> Vec<u32> {
        self.tokenizer.encode(&String::from_utf8_lossy(s), false)
    }
}

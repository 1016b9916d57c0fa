//! Text <-> token ids, built from a GGUF file's `tokenizer.*` metadata, giving the ids llama.cpp gives.
//!
//! Three model types: gpt2-style byte-level BPE (`tokenizer.ggml.model` = "gpt2", words split by the
//! pre-tokenizer that `tokenizer.ggml.pre` names), SentencePiece BPE ("llama"), and Gemma 4's BPE over
//! raw UTF-8 with spaces written `▁` ("gemma4"). Special tokens written
//! in the text are cut out first, longest first, exactly where they occur; the text between them is
//! tokenized on its own.

mod bpe;
mod pretokenize;
mod spm;
mod stream;
mod vocab;
mod wpm;

pub use stream::StreamDecoder;

use crate::gguf::Header;
use vocab::{Encoding, Specials, Vocab};

/// Why a tokenizer could not be built from a file's metadata.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("the file has no tokenizer: metadata key {0:?} is missing")]
    Missing(&'static str),
    #[error("tokenizer model {0:?} is not supported (Wick reads \"gpt2\" byte-level BPE, \"llama\" SentencePiece and \"gemma4\")")]
    UnknownModel(String),
    #[error("pre-tokenizer {0:?} (tokenizer.ggml.pre) is not supported")]
    UnknownPreTokenizer(String),
    #[error("pre-tokenizer {name:?}: its expression does not compile: {err}")]
    BadPreTokenizerRegex { name: String, err: String },
    #[error("metadata key {key:?}: {problem}")]
    Malformed { key: &'static str, problem: String },
}

/// A token's type, as `tokenizer.ggml.token_type` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    Normal,
    Unknown,
    /// Structure such as `<|im_start|>`: parsed from text only when asked, hidden when decoding for display.
    Control,
    /// Added by the model's authors; always parsed from text as a whole.
    UserDefined,
    Unused,
    /// `<0xNN>`: one raw byte.
    Byte,
    Undefined,
}

impl TokenKind {
    fn from_gguf(t: i64) -> TokenKind {
        match t {
            1 => TokenKind::Normal,
            2 => TokenKind::Unknown,
            3 => TokenKind::Control,
            4 => TokenKind::UserDefined,
            5 => TokenKind::Unused,
            6 => TokenKind::Byte,
            _ => TokenKind::Undefined,
        }
    }
}

enum Model {
    Bpe(bpe::Bpe),
    /// SentencePiece, with or without a space put before text that starts the input or follows a special token.
    Spm {
        add_space_prefix: bool,
    },
    /// WordPiece (BERT).
    Wpm(wpm::Wpm),
}

pub struct Tokenizer {
    vocab: Vocab,
    model: Model,
    specials: Specials,
    add_bos: bool,
    /// The token a whole input ends with, where the model wants one.
    end_of_input: Option<u32>,
    /// Tokens that are cut out of text before tokenizing, longest text first.
    special_order: Vec<u32>,
    chat_template: Option<String>,
}

/// A piece of the input: text still to tokenize, or a special token found in it.
enum Fragment {
    Text(std::ops::Range<usize>),
    Token(u32),
}

impl Tokenizer {
    pub fn from_gguf(h: &Header) -> Result<Tokenizer, TokenizerError> {
        let model = match h.get_str("tokenizer.ggml.model") {
            None => return Err(TokenizerError::Missing("tokenizer.ggml.model")),
            Some("gpt2") => {
                let pre = h.get_str("tokenizer.ggml.pre").unwrap_or("default");
                let pre = pretokenize::PreTokenizer::new(pre)?;
                Model::Bpe(bpe::Bpe::new(vocab::merges(h)?.into_iter(), pre))
            }
            // SentencePiece-style BPE over raw UTF-8, whatever `tokenizer.ggml.pre` says.
            Some("gemma4") => {
                let pre = pretokenize::PreTokenizer::new("gemma4")?;
                Model::Bpe(bpe::Bpe::new(vocab::merges(h)?.into_iter(), pre))
            }
            Some("llama") => Model::Spm {
                add_space_prefix: h
                    .get_bool("tokenizer.ggml.add_space_prefix")
                    .unwrap_or(true),
            },
            Some("bert") => Model::Wpm(wpm::Wpm::new(h)),
            Some(other) => return Err(TokenizerError::UnknownModel(other.to_string())),
        };
        // What holds when the file does not say: SentencePiece vocabularies start <unk>, <s>, </s> and
        // add BOS; gpt2 vocabularies have no conventional ids, and their pre-tokenizer knows about BOS.
        let (encoding, default_ids, add_bos_default) = match &model {
            Model::Bpe(b) if b.escaped_spaces() => (Encoding::SentencePiece, (None, None), true),
            Model::Bpe(b) => (Encoding::ByteLevel, (None, None), b.add_bos_default()),
            Model::Spm { .. } => (Encoding::SentencePiece, (Some(1), Some(2)), true),
            // BERT's [CLS] begins an input, as llama.cpp's defaults have it.
            Model::Wpm(_) => (Encoding::SentencePiece, (Some(101), None), true),
        };
        let mut vocab = Vocab::from_gguf(h, encoding)?;
        let specials = Specials::from_gguf(h, &mut vocab, default_ids);
        if matches!(model, Model::Spm { .. }) && vocab.unk.is_none() {
            vocab.unk = Some(0);
        }
        if matches!(model, Model::Wpm(_)) && vocab.unk.is_none() {
            vocab.unk = vocab.id_of("[UNK]");
        }
        // Gemma 4 always starts with BOS, as llama.cpp makes it whatever the file says.
        let forced_bos = matches!(&model, Model::Bpe(b) if b.escaped_spaces());
        let add_bos = (forced_bos
            || h.get_bool("tokenizer.ggml.add_bos_token")
                .unwrap_or(add_bos_default))
            && specials.bos.is_some();
        // BERT's [SEP] ends an input; other models' EOS where the file asks for it.
        let end_of_input = match &model {
            Model::Wpm(_) => h
                .get_u64("tokenizer.ggml.seperator_token_id")
                .or(Some(102))
                .filter(|&i| i < vocab.len() as u64)
                .map(|i| i as u32),
            _ => specials
                .eos
                .filter(|_| h.get_bool("tokenizer.ggml.add_eos_token").unwrap_or(false)),
        };
        let mut special_order: Vec<u32> = (0..vocab.len() as u32)
            .filter(|&i| {
                matches!(
                    vocab.kinds[i as usize],
                    TokenKind::Control | TokenKind::UserDefined | TokenKind::Unknown
                )
            })
            .collect();
        special_order.sort_by_key(|&i| std::cmp::Reverse(vocab.texts[i as usize].len()));
        let chat_template = h.get_str("tokenizer.chat_template").map(str::to_string);
        Ok(Tokenizer {
            chat_template,
            vocab,
            model,
            specials,
            add_bos,
            end_of_input,
            special_order,
        })
    }

    /// The token ids of `text`. Never adds BOS (see `add_bos`). With `parse_special`, control tokens written
    /// in the text (e.g. `<|im_start|>`) become their ids; user-defined tokens always do.
    pub fn encode(&self, text: &str, parse_special: bool) -> Vec<u32> {
        let mut out = Vec::new();
        let mut after_special = true;
        for fragment in self.partition(text, parse_special) {
            match fragment {
                Fragment::Token(id) => {
                    out.push(id);
                    after_special = true;
                }
                Fragment::Text(r) => {
                    match &self.model {
                        Model::Bpe(b) => b.encode(&self.vocab, &text[r], &mut out),
                        Model::Wpm(w) => w.encode(&self.vocab, &text[r], &mut out),
                        Model::Spm { add_space_prefix } => {
                            let prefix = if *add_space_prefix && after_special {
                                " "
                            } else {
                                ""
                            };
                            spm::encode(&self.vocab, &format!("{prefix}{}", &text[r]), &mut out);
                        }
                    }
                    after_special = false;
                }
            }
        }
        out
    }

    /// Cuts special tokens out of `text`: each token in turn (longest first) splits every text fragment
    /// at each of its occurrences.
    fn partition(&self, text: &str, parse_special: bool) -> Vec<Fragment> {
        let mut fragments = if text.is_empty() {
            vec![]
        } else {
            vec![Fragment::Text(0..text.len())]
        };
        for &id in &self.special_order {
            if !parse_special && self.vocab.kinds[id as usize] != TokenKind::UserDefined {
                continue;
            }
            let needle = self.vocab.texts[id as usize].as_str();
            if !fragments
                .iter()
                .any(|f| matches!(f, Fragment::Text(r) if text[r.clone()].contains(needle)))
            {
                continue;
            }
            let mut next = Vec::with_capacity(fragments.len() + 2);
            for f in fragments {
                let Fragment::Text(r) = f else {
                    next.push(f);
                    continue;
                };
                let mut start = r.start;
                while let Some(pos) = text[start..r.end].find(needle) {
                    if pos > 0 {
                        next.push(Fragment::Text(start..start + pos));
                    }
                    next.push(Fragment::Token(id));
                    start += pos + needle.len();
                }
                if start < r.end {
                    next.push(Fragment::Text(start..r.end));
                }
            }
            fragments = next;
        }
        fragments
    }

    /// Whether a prompt should start with BOS (`tokenizer.ggml.add_bos_token`, else the family's default).
    pub fn add_bos(&self) -> bool {
        self.add_bos
    }

    /// The token a whole input ends with, where the model wants one: EOS where the file says
    /// (`tokenizer.ggml.add_eos_token`: embedding models such as Qwen3-Embedding read their vector off
    /// it), BERT's [SEP]. Chat prompts, which go on with the reply, never take it.
    pub fn end_of_input(&self) -> Option<u32> {
        self.end_of_input
    }

    pub fn bos(&self) -> Option<u32> {
        self.specials.bos
    }

    pub fn eos(&self) -> Option<u32> {
        self.specials.eos
    }

    /// End of turn (e.g. `<|eot_id|>`): the file's, else a token with a conventional end-of-turn text.
    pub fn eot(&self) -> Option<u32> {
        self.specials.eot
    }

    /// End of message (`<|eom_id|>`).
    pub fn eom(&self) -> Option<u32> {
        self.specials.eom
    }

    /// Whether generating `id` ends the generation: EOS, EOT, EOM and the tokens that by their text end a
    /// turn (`<|im_end|>`, `<|eot_id|>`, `<|endoftext|>`, `<end_of_turn>`, ...).
    pub fn is_end_of_generation(&self, id: u32) -> bool {
        self.specials.eog.binary_search(&id).is_ok()
    }

    /// All end-of-generation ids, sorted.
    pub fn end_of_generation_ids(&self) -> &[u32] {
        &self.specials.eog
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// The raw bytes token `id` stands for (empty for an unknown id). Control and user-defined tokens give
    /// their text; a token may be part of a multi-byte character (see `StreamDecoder`).
    pub fn token_piece(&self, id: u32) -> &[u8] {
        self.vocab
            .pieces
            .get(id as usize)
            .map_or(&[], |p| p.as_slice())
    }

    /// The token's text as stored in the file (e.g. `Ġthe`, `▁the`, `<|im_end|>`).
    pub fn token_text(&self, id: u32) -> Option<&str> {
        self.vocab.texts.get(id as usize).map(|s| s.as_str())
    }

    pub fn token_kind(&self, id: u32) -> Option<TokenKind> {
        self.vocab.kinds.get(id as usize).copied()
    }

    /// The id of the token whose stored text is exactly `text`.
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.vocab.id_of(text)
    }

    /// The file's chat template (`tokenizer.chat_template`), for `chat_template::render`.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    /// The text of `ids`. Without `special`, control and unknown tokens are left out (as for display).
    /// Invalid UTF-8 becomes U+FFFD.
    pub fn decode(&self, ids: &[u32], special: bool) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            if special || !self.is_hidden(id) {
                bytes.extend_from_slice(self.token_piece(id));
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Tokens that display as nothing unless asked: control and unknown tokens.
    fn is_hidden(&self, id: u32) -> bool {
        matches!(
            self.token_kind(id),
            Some(TokenKind::Control | TokenKind::Unknown)
        )
    }
}

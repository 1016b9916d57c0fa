//! WordPiece (BERT's tokenizer, GGUF `tokenizer.ggml.model` "bert"), as llama.cpp runs it: the text
//! normalized (NFD with accents dropped, lowercased, as `tokenizer.ggml.normalizer.*` say), split at
//! whitespace and around each punctuation mark, ASCII symbol and CJK ideograph, then each word matched
//! longest piece first from its start. The vocabulary marks a word's first piece with `▁` (the file's
//! converter turned BERT's `##` continuations into bare pieces and gave the rest the mark); a word
//! with a piece that matches nothing is one [UNK].

use super::vocab::Vocab;
use crate::gguf::Header;
use fancy_regex::Regex;
use unicode_normalization::UnicodeNormalization;

pub(crate) struct Wpm {
    lowercase: bool,
    strip_accents: bool,
    /// One character's class: whitespace, other (controls, format, unassigned), a nonspacing mark,
    /// punctuation, a symbol (groups 1 to 5).
    classes: Regex,
}

/// What a character is to the splitter.
#[derive(PartialEq)]
enum Class {
    Whitespace,
    Other,
    Mark,
    Punctuation,
    Symbol,
    Letter,
}

impl Wpm {
    pub fn new(h: &Header) -> Wpm {
        let lowercase = h
            .get_bool("tokenizer.ggml.normalizer.lowercase")
            .unwrap_or(true);
        Wpm {
            lowercase,
            strip_accents: h
                .get_bool("tokenizer.ggml.normalizer.strip_accents")
                .unwrap_or(lowercase),
            classes: Regex::new(r"^(?:(\s)|(\p{C})|(\p{Mn})|(\p{P})|(\p{S}))$")
                .expect("a valid pattern"),
        }
    }

    fn class(&self, c: char) -> Class {
        let mut buf = [0; 4];
        let caps = self
            .classes
            .captures(c.encode_utf8(&mut buf))
            .ok()
            .flatten();
        let Some(caps) = caps else {
            return Class::Letter;
        };
        match (1..=5).find(|&i| caps.get(i).is_some()) {
            Some(1) => Class::Whitespace,
            Some(2) => Class::Other,
            Some(3) => Class::Mark,
            Some(4) => Class::Punctuation,
            _ => Class::Symbol,
        }
    }

    /// The words of `text`, normalized.
    fn words(&self, text: &str) -> Vec<String> {
        let chars: Vec<char> = match self.strip_accents {
            true => text.nfd().collect(),
            false => text.chars().collect(),
        };
        let mut words = vec![String::new()];
        let finish = |words: &mut Vec<String>| {
            if !words.last().is_some_and(String::is_empty) {
                words.push(String::new());
            }
        };
        for c in chars {
            match self.class(c) {
                Class::Whitespace => {
                    finish(&mut words);
                    continue;
                }
                Class::Other => continue,
                Class::Mark if self.strip_accents => continue,
                _ if c == '\0' || c == '\u{FFFD}' => continue,
                class => {
                    // A word of its own.
                    let alone = class == Class::Punctuation
                        || (class == Class::Symbol && (c as u32) < 0x7F)
                        || is_cjk_ideograph(c);
                    if alone {
                        finish(&mut words);
                    }
                    let word = words.last_mut().expect("a word in progress");
                    match self.lowercase {
                        true => word.extend(c.to_lowercase()),
                        false => word.push(c),
                    }
                    if alone {
                        finish(&mut words);
                    }
                }
            }
        }
        words.retain(|w| !w.is_empty());
        words
    }

    pub fn encode(&self, vocab: &Vocab, text: &str, out: &mut Vec<u32>) {
        for word in self.words(text) {
            let marked = format!("\u{2581}{word}");
            let bytes = marked.as_bytes();
            let start = out.len();
            let mut i = 0;
            while i < bytes.len() {
                // The longest piece from byte i that the vocabulary has (a piece cut inside a
                // character is never one).
                let longest = (i + 1..=bytes.len().min(i + vocab.max_token_len))
                    .rev()
                    .find_map(|j| {
                        let piece = std::str::from_utf8(&bytes[i..j]).ok()?;
                        vocab.id_of(piece).map(|id| (id, j))
                    });
                match longest {
                    Some((id, j)) => {
                        out.push(id);
                        i = j;
                    }
                    None => {
                        out.truncate(start);
                        break;
                    }
                }
            }
            if out.len() == start {
                out.extend(vocab.unk);
            }
        }
    }
}

/// The CJK ideograph blocks BERT's splitter sets apart, as llama.cpp lists them.
fn is_cjk_ideograph(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

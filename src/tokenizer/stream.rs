//! Turning generated tokens into text as they arrive. A character may span tokens (an emoji is often
//! two or three byte tokens), so bytes that end in an incomplete UTF-8 sequence wait for the next token.

use super::Tokenizer;

/// Fed one token id at a time, hands back only complete, valid UTF-8 text.
#[derive(Default)]
pub struct StreamDecoder {
    pending: Vec<u8>,
    special: bool,
    /// Control tokens written even so, sorted (a reasoning format's markers).
    shown: Vec<u32>,
}

impl StreamDecoder {
    /// A decoder that leaves out control and unknown tokens, as for display.
    pub fn new() -> StreamDecoder {
        StreamDecoder::default()
    }

    /// A decoder that also writes control tokens' text (e.g. `<|im_end|>`).
    pub fn with_special() -> StreamDecoder {
        StreamDecoder {
            special: true,
            ..StreamDecoder::default()
        }
    }

    /// A decoder that leaves out control and unknown tokens but those whose text is one of
    /// `texts` (where `tokenizer` has them as tokens).
    pub fn showing(tokenizer: &Tokenizer, texts: &[&str]) -> StreamDecoder {
        let mut shown: Vec<u32> = texts.iter().filter_map(|t| tokenizer.token_id(t)).collect();
        shown.sort_unstable();
        StreamDecoder {
            shown,
            ..StreamDecoder::default()
        }
    }

    /// Adds token `id` and returns the text that is now complete (often empty while a character is
    /// incomplete). Bytes that can never become valid UTF-8 come out as U+FFFD.
    pub fn push(&mut self, tokenizer: &Tokenizer, id: u32) -> String {
        if !self.special && tokenizer.is_hidden(id) && self.shown.binary_search(&id).is_err() {
            return String::new();
        }
        self.pending.extend_from_slice(tokenizer.token_piece(id));
        let mut out = String::new();
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (good, tail) = rest.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(good).expect("checked valid"));
                    match e.error_len() {
                        // An invalid sequence: replace it and go on.
                        Some(n) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            rest = &tail[n..];
                        }
                        // The start of a character whose other bytes have not arrived yet.
                        None => {
                            rest = tail;
                            break;
                        }
                    }
                }
            }
        }
        self.pending = rest.to_vec();
        out
    }

    /// Whatever is still held back (an incomplete character at the end), as U+FFFD; resets the decoder.
    pub fn finish(&mut self) -> String {
        let s = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        s
    }
}

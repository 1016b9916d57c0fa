//! Byte-level BPE (gpt2 family): bytes map to printable characters, then adjacent symbols merge by rank.

use std::collections::HashMap;

/// gpt2's byte-to-character map: printable bytes stand for themselves, the rest move to U+0100 and up.
fn byte_to_char() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..256u32 {
        let printable =
            (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || (0xae..=0xff).contains(&b);
        map[b as usize] = if printable {
            char::from_u32(b).expect("a byte is a char")
        } else {
            next += 1;
            char::from_u32(next - 1).expect("below U+0200")
        };
    }
    map
}

/// The bytes a byte-level token text stands for. Characters outside the map (special tokens such as
/// `<|im_start|>` are stored as plain text) are kept as their UTF-8.
pub fn decode_bytes(token: &str) -> Vec<u8> {
    thread_local! {
        static CHAR_TO_BYTE: HashMap<char, u8> =
            byte_to_char().iter().enumerate().map(|(b, &c)| (c, b as u8)).collect();
    }
    CHAR_TO_BYTE.with(|m| {
        let mut out = Vec::with_capacity(token.len());
        for c in token.chars() {
            match m.get(&c) {
                Some(&b) => out.push(b),
                None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            }
        }
        out
    })
}

pub struct Bpe {
    ranks: HashMap<(String, String), u32>,
    byte_chars: [char; 256],
}

impl Bpe {
    pub fn new(merges: &[&str]) -> Bpe {
        let ranks = merges
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                m.split_once(' ')
                    .map(|(a, b)| ((a.to_string(), b.to_string()), i as u32))
            })
            .collect();
        Bpe {
            ranks,
            byte_chars: byte_to_char(),
        }
    }

    /// Appends the ids of one pre-tokenized word.
    pub fn encode_word(&self, word: &str, ids: &HashMap<String, u32>, out: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        let mut symbols: Vec<String> = word
            .bytes()
            .map(|b| self.byte_chars[b as usize].to_string())
            .collect();
        // Merge the lowest-ranked adjacent pair until none is in the merge list. Quadratic in the word's
        // length, and words are short: the pre-tokenizer splits text at letters, digits and spaces.
        loop {
            let best = symbols
                .windows(2)
                .enumerate()
                .filter_map(|(i, w)| {
                    self.ranks
                        .get(&(w[0].clone(), w[1].clone()))
                        .map(|&r| (r, i))
                })
                .min();
            let Some((_, i)) = best else { break };
            let right = symbols.remove(i + 1);
            symbols[i].push_str(&right);
        }
        for s in symbols {
            match ids.get(&s) {
                Some(&id) => out.push(id),
                // Not in the vocabulary: fall back to its single-byte tokens.
                None => out.extend(s.chars().filter_map(|c| ids.get(&c.to_string()).copied())),
            }
        }
    }
}

//! Byte-level BPE (the gpt2 family): pre-tokenize, map each byte to a printable character, then merge
//! adjacent symbols of each word in the order of `tokenizer.ggml.merges`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::pretokenize::PreTokenizer;
use super::Vocab;

/// gpt2's reversible byte <-> character table: printable Latin-1 bytes stand for themselves, the other 68
/// bytes map to U+0100 upwards in byte order. So every token's text is printable and space is `Ġ`.
const BYTE_CHARS: [char; 256] = {
    let mut table = ['\0'; 256];
    let mut next_unprintable = 0x100;
    let mut b = 0;
    while b < 256 {
        let printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        let cp = if printable {
            b as u32
        } else {
            next_unprintable += 1;
            next_unprintable - 1
        };
        table[b] = char::from_u32(cp).unwrap();
        b += 1;
    }
    table
};

pub(crate) fn byte_to_char(b: u8) -> char {
    BYTE_CHARS[b as usize]
}

/// The byte a character of a byte-level token stands for, if it is one of the 256.
pub(crate) fn char_to_byte(c: char) -> Option<u8> {
    match c as u32 {
        0x21..=0x7e | 0xa1..=0xac | 0xae..=0xff => Some(c as u8),
        0x100..=0x143 => BYTE_CHARS.iter().position(|&x| x == c).map(|b| b as u8),
        _ => None,
    }
}

pub(crate) struct Bpe {
    /// Merge rank by (left, right): `ranks[left][right]`. Nested so lookups borrow `&str` without allocating.
    ranks: HashMap<String, HashMap<String, u32>>,
    pre: PreTokenizer,
}

impl Bpe {
    /// `merges` are the lines of `tokenizer.ggml.merges` ("left right"); earlier lines merge first.
    pub fn new<'a>(merges: impl Iterator<Item = &'a str>, pre: PreTokenizer) -> Bpe {
        let mut ranks: HashMap<String, HashMap<String, u32>> = HashMap::new();
        for (rank, line) in merges.enumerate() {
            // Split at the first space after the first character, so a left part may itself be " ".
            let skip = line.chars().next().map_or(0, char::len_utf8);
            let Some(pos) = line[skip..].find(' ').map(|p| p + skip) else {
                continue;
            };
            let (left, right) = (&line[..pos], &line[pos + 1..]);
            // The first occurrence of a pair keeps its rank.
            ranks
                .entry(left.to_string())
                .or_default()
                .entry(right.to_string())
                .or_insert(rank as u32);
        }
        Bpe { ranks, pre }
    }

    pub fn add_bos_default(&self) -> bool {
        self.pre.add_bos_default
    }

    /// Whether tokens are raw UTF-8 with spaces written `▁` (see `PreTokenizer::escaped_spaces`).
    pub fn escaped_spaces(&self) -> bool {
        self.pre.escaped_spaces
    }

    /// Appends the tokens of `text` (which holds no special tokens) to `out`.
    pub fn encode(&self, vocab: &Vocab, text: &str, out: &mut Vec<u32>) {
        if self.pre.escaped_spaces {
            let text = text.replace(' ', "\u{2581}");
            for range in self.pre.split(&text) {
                let word = &text[range];
                // A run of newlines that is itself a token stays whole, as in llama.cpp (Gemma 4
                // has tokens for runs up to 31 long).
                if !word.contains(|c| c != '\n') {
                    if let Some(id) = vocab.id_of(word) {
                        out.push(id);
                        continue;
                    }
                }
                self.encode_word(vocab, word, out);
            }
            return;
        }
        let mut word = String::new();
        for range in self.pre.split(text) {
            word.clear();
            word.extend(text[range].bytes().map(byte_to_char));
            self.encode_word(vocab, &word, out);
        }
    }

    /// Merges the characters of one byte-encoded word. Always the lowest-ranked adjacent pair first
    /// (leftmost on ties), with a heap of candidate pairs and a linked list of symbols, so a long word
    /// costs O(n log n).
    fn encode_word(&self, vocab: &Vocab, word: &str, out: &mut Vec<u32>) {
        if self.pre.ignore_merges {
            if let Some(id) = vocab.id_of(word) {
                out.push(id);
                return;
            }
        }
        // Each symbol is a byte range of `word`; merging extends the left one and empties the right.
        let mut syms: Vec<Symbol> = Vec::new();
        for (i, (start, c)) in word.char_indices().enumerate() {
            syms.push(Symbol {
                start,
                len: c.len_utf8(),
                prev: i.checked_sub(1),
                next: None,
            });
            if i > 0 {
                syms[i - 1].next = Some(i);
            }
        }
        let mut heap = BinaryHeap::new();
        let text = |s: &Symbol| &word[s.start..s.start + s.len];
        let push_pair =
            |heap: &mut BinaryHeap<Reverse<(u32, usize, usize)>>, syms: &[Symbol], l: usize| {
                let Some(r) = syms[l].next else { return };
                if let Some(&rank) = self
                    .ranks
                    .get(text(&syms[l]))
                    .and_then(|m| m.get(text(&syms[r])))
                {
                    heap.push(Reverse((rank, l, syms[l].len + syms[r].len)));
                }
            };
        for i in 0..syms.len() {
            push_pair(&mut heap, &syms, i);
        }
        while let Some(Reverse((_, l, size))) = heap.pop() {
            // A pair is stale when either side has since merged with something else.
            let Some(r) = syms[l].next else { continue };
            if syms[l].len == 0 || syms[r].len == 0 || syms[l].len + syms[r].len != size {
                continue;
            }
            syms[l].len = size;
            syms[r].len = 0;
            syms[l].next = syms[r].next;
            if let Some(n) = syms[r].next {
                syms[n].prev = Some(l);
            }
            if let Some(p) = syms[l].prev {
                push_pair(&mut heap, &syms, p);
            }
            push_pair(&mut heap, &syms, l);
        }
        for s in syms.iter().filter(|s| s.len > 0) {
            match vocab.id_of(text(s)) {
                Some(id) => out.push(id),
                // A symbol the vocabulary lacks: fall back to single-byte tokens where they exist
                // (`<0xNN>` where tokens are raw UTF-8; else, as llama.cpp does, the byte itself).
                None if self.pre.escaped_spaces => out.extend(
                    text(s)
                        .bytes()
                        .filter_map(|b| vocab.id_of(&format!("<0x{b:02X}>"))),
                ),
                None => {
                    out.extend(text(s).bytes().filter_map(|b| {
                        std::str::from_utf8(&[b]).ok().and_then(|t| vocab.id_of(t))
                    }))
                }
            }
        }
    }
}

struct Symbol {
    start: usize,
    len: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_table_round_trips() {
        assert_eq!(byte_to_char(b' '), 'Ġ');
        assert_eq!(byte_to_char(b'\n'), 'Ċ');
        assert_eq!(byte_to_char(b'a'), 'a');
        for b in 0..=255u8 {
            assert_eq!(char_to_byte(byte_to_char(b)), Some(b));
        }
        assert_eq!(char_to_byte('€'), None);
    }
}

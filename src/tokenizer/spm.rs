//! SentencePiece BPE (`tokenizer.ggml.model` = "llama"): spaces become `▁`, then adjacent symbols merge
//! by the score of the token they would form, highest first, as long as that token exists. Characters left
//! without a token are written as their `<0xNN>` byte tokens.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::Vocab;

/// Appends the tokens of `text` (which holds no special tokens, and already carries any space prefix).
pub(crate) fn encode(vocab: &Vocab, text: &str, out: &mut Vec<u32>) {
    let text = text.replace(' ', "\u{2581}");
    let mut syms: Vec<Symbol> = Vec::new();
    for (i, (start, c)) in text.char_indices().enumerate() {
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
    let piece = |s: &Symbol| &text[s.start..s.start + s.len];
    let mut heap = BinaryHeap::new();
    // A candidate pair: the token its two symbols would form must exist.
    let push_pair = |heap: &mut BinaryHeap<Bigram>, syms: &[Symbol], l: usize| {
        let Some(r) = syms[l].next else { return };
        let size = syms[l].len + syms[r].len;
        if let Some(id) = vocab.id_of(&text[syms[l].start..syms[l].start + size]) {
            heap.push(Bigram {
                score: vocab.score(id),
                left: l,
                size,
            });
        }
    };
    for i in 0..syms.len() {
        push_pair(&mut heap, &syms, i);
    }
    while let Some(Bigram { left: l, size, .. }) = heap.pop() {
        let Some(r) = syms[l].next else { continue };
        if syms[l].len == 0 || syms[r].len == 0 || syms[l].len + syms[r].len != size {
            continue; // stale: one side has merged since
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
        match vocab.id_of(piece(s)) {
            Some(id) => out.push(id),
            None => {
                for b in piece(s).bytes() {
                    out.extend(vocab.byte_token(b).or(vocab.unk));
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

/// Heap order: the highest score first; on equal scores the leftmost pair.
struct Bigram {
    score: f32,
    left: usize,
    size: usize,
}

impl Ord for Bigram {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then(other.left.cmp(&self.left))
    }
}
impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Bigram {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Bigram {}

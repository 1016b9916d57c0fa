//! Pre-tokenizers: the regular expressions that split text into words before BPE, as llama.cpp names
//! them in `tokenizer.ggml.pre`. Where a pre-tokenizer has several expressions they apply in turn, each
//! to the pieces the previous one left (matches and the text between them alike).

use super::TokenizerError;
use fancy_regex::Regex;

const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
const LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

pub struct PreTokenizer {
    passes: Vec<Regex>,
}

impl PreTokenizer {
    pub fn named(name: &str) -> Result<PreTokenizer, TokenizerError> {
        let exprs: &[&str] = match name {
            "default" | "gpt2" | "gpt-2" => &[GPT2],
            // Digits one by one, then gpt2's expression.
            "smollm" | "starcoder" | "refact" => &[r"\p{N}", GPT2],
            "llama-bpe" | "llama3" => &[LLAMA3],
            "qwen2" => &[QWEN2],
            other => return Err(TokenizerError::UnsupportedPre(other.to_string())),
        };
        let passes = exprs
            .iter()
            .map(|e| Regex::new(e).expect("a valid built-in expression"))
            .collect();
        Ok(PreTokenizer { passes })
    }

    pub fn split<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let mut pieces = vec![text];
        for re in &self.passes {
            let mut next = Vec::with_capacity(pieces.len());
            for piece in pieces {
                let mut last = 0;
                for m in re.find_iter(piece).flatten() {
                    if m.start() > last {
                        next.push(&piece[last..m.start()]);
                    }
                    if m.end() > m.start() {
                        next.push(m.as_str());
                    }
                    last = m.end();
                }
                if last < piece.len() {
                    next.push(&piece[last..]);
                }
            }
            pieces = next;
        }
        pieces
    }
}

//! Pre-tokenization: splitting text into words before BPE runs on each word.
//!
//! `tokenizer.ggml.pre` names a list of regular expressions. They apply in sequence: the first splits the
//! text into pieces (its matches and the gaps between them), the second splits each of those pieces on its
//! own, and so on. A later expression never sees across the edge of an earlier piece, which is why, for
//! example, `smollm` first isolates every digit and only then applies the gpt2 expression.
//! The expressions are the ones llama.cpp uses for each name (its adaptations of the `tokenizer.json`
//! originals, e.g. `(?i:'s)` spelled out as `'[sS]`).

use std::ops::Range;

use fancy_regex::Regex;

use super::TokenizerError;

// The gpt2 expression, shared by many families.
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";

// Contractions in either case, the llama3/qwen2 way.
const CONTRACTIONS: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

const LLAMA3_TAIL: &str =
    r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN2_TAIL: &str =
    r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN35_TAIL: &str = r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

// Letters as written in deepseek-llm's tokenizer.json: Latin, Greek, Cyrillic, Armenian, Georgian and
// other cased scripts, listed as ranges.
const DEEPSEEK_LLM_LETTERS: &str = r"\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";
const DEEPSEEK_LLM_PUNCT: &str = r"\s?[!-/:-~！-／：-～‘-‟　-。]+";
const DEEPSEEK_CJK: &str = r"[一-龥ࠀ-一가-퟿]+";

const DEEPSEEK_V3_MAIN: &str = r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"##;

// Case-aware words: an optional run of "upper" letters then "lower" ones, or the reverse. Any letter
// outside a-z counts as upper and any outside A-Z as lower, as in llama.cpp's adaptation.
// CONTR stands for optional contractions, NUM for the digit-group expression.
const CASED: &str = r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+CONTR|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*CONTR|NUM| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

const YOUTU_CJK: &str = r"[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+";
const YOUTU_WORDS: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+CONTR|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*CONTR|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

const SEED_CODER_TAIL: &str =
    r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+";
const BAILINGMOE: &str = r"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+";

/// The splitting rules of one pre-tokenizer.
pub(crate) struct PreTokenizer {
    regexes: Vec<Regex>,
    /// Whether a word that is itself a vocabulary token skips the merges (llama3-style vocabularies).
    pub ignore_merges: bool,
    /// The default of `tokenizer.ggml.add_bos_token` when the file does not say.
    pub add_bos_default: bool,
    /// SentencePiece-style BPE (Gemma 4): spaces are written `▁` before splitting, tokens are raw
    /// UTF-8 rather than gpt2's byte characters, and a byte the merges leave alone is `<0xNN>`.
    pub escaped_spaces: bool,
}

impl PreTokenizer {
    /// The pre-tokenizer called `name` (the value of `tokenizer.ggml.pre`; empty means "default").
    pub fn new(name: &str) -> Result<PreTokenizer, TokenizerError> {
        let family =
            family(name).ok_or_else(|| TokenizerError::UnknownPreTokenizer(name.to_string()))?;
        let regexes = family
            .exprs
            .iter()
            .map(|e| {
                fancy_regex::RegexBuilder::new(&any_letter(e))
                    // Long runs (a megabyte of one character) must not trip the backtracking limit.
                    .backtrack_limit(usize::MAX / 2)
                    .build()
                    .map_err(|err| TokenizerError::BadPreTokenizerRegex {
                        name: name.to_string(),
                        err: err.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PreTokenizer {
            regexes,
            ignore_merges: family.ignore_merges,
            add_bos_default: family.add_bos,
            escaped_spaces: family.escaped_spaces,
        })
    }

    /// Splits `text` into words (byte ranges that together cover the text, in order).
    pub fn split(&self, text: &str) -> Vec<Range<usize>> {
        let mut pieces: Vec<Range<usize>> = std::iter::once(0..text.len()).collect();
        for re in &self.regexes {
            let mut next = Vec::with_capacity(pieces.len());
            for piece in pieces {
                split_one(re, text, piece, &mut next);
            }
            pieces = next;
        }
        pieces.retain(|r| !r.is_empty());
        pieces
    }
}

/// llama.cpp matches every letter subcategory (`\p{Lu}`, `\p{Ll}`, ...) as any letter; so do we.
fn any_letter(expr: &str) -> String {
    ["Lu", "Ll", "Lt", "Lm", "Lo"]
        .iter()
        .fold(expr.to_string(), |e, c| {
            e.replace(&format!("\\p{{{c}}}"), "\\p{L}")
        })
}

/// Splits `text[piece]` by the matches of `re`, keeping the matches and the gaps between them. The
/// expression sees only the piece, so anchors and lookaheads stop at its edges.
fn split_one(re: &Regex, text: &str, piece: Range<usize>, out: &mut Vec<Range<usize>>) {
    let base = piece.start;
    let hay = &text[piece.clone()];
    let mut last = 0;
    for m in re.find_iter(hay) {
        // An error (the backtracking limit, unreachable as set above) leaves the rest as one word.
        let Ok(m) = m else { break };
        if m.start() > last {
            out.push(base + last..base + m.start());
        }
        if m.end() > m.start() {
            out.push(base + m.start()..base + m.end());
        }
        last = m.end();
    }
    if last < hay.len() {
        out.push(base + last..piece.end);
    }
}

/// What a pre-tokenizer name stands for.
struct Family {
    exprs: Vec<String>,
    ignore_merges: bool,
    add_bos: bool,
    escaped_spaces: bool,
}

impl Family {
    fn new(exprs: &[&str]) -> Family {
        let exprs = exprs.iter().map(|e| e.to_string()).collect();
        Family {
            exprs,
            ignore_merges: false,
            add_bos: false,
            escaped_spaces: false,
        }
    }

    fn ignoring_merges(self) -> Family {
        Family {
            ignore_merges: true,
            ..self
        }
    }

    fn adding_bos(self) -> Family {
        Family {
            add_bos: true,
            ..self
        }
    }

    fn escaping_spaces(self) -> Family {
        Family {
            escaped_spaces: true,
            ..self
        }
    }
}

/// The names llama.cpp knows, grouped by the expressions they share.
fn family(name: &str) -> Option<Family> {
    let llama3 = format!("{CONTRACTIONS}{LLAMA3_TAIL}");
    let qwen2 = format!("{CONTRACTIONS}{QWEN2_TAIL}");
    let qwen35 = format!("{CONTRACTIONS}{QWEN35_TAIL}");
    let seed_coder = format!("{CONTRACTIONS}{SEED_CODER_TAIL}");
    let youtu_words = YOUTU_WORDS.replace("CONTR", &format!("{CONTRACTIONS}?"));
    let gpt4o = CASED
        .replace("CONTR", &format!("{CONTRACTIONS}?"))
        .replace("NUM", r"\p{N}{1,3}");
    let tekken = CASED.replace("CONTR", "").replace("NUM", r"\p{N}");
    Some(match name {
        "" | "default" => {
            Family::new(&[r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"])
        }
        "gpt-2" | "phi-2" | "jina-es" | "jina-de" | "gigachat" | "jina-v2-es" | "jina-v2-de"
        | "a.x-4.0" | "mellum" | "modern-bert" | "mpt" | "olmo" | "jais" | "trillion"
        | "granite-docling" | "exaone4" | "jina-v1-en" | "jina-v2-code" | "roberta-bpe" => {
            Family::new(&[GPT2])
        }
        "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva-7b"
        | "mellum2" => Family::new(&[r"\p{N}", GPT2]),
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral" | "midm-2.0"
        | "lfm2" | "jina-v5-nano" => Family::new(&[&llama3]).ignoring_merges().adding_bos(),
        "dbrx" | "smaug-bpe" | "chatglm-bpe" => Family::new(&[&llama3]),
        "glm4" | "glm5" => Family::new(&[&llama3]).ignoring_merges(),
        "qwen2" | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "megrez" | "stablelm2" | "hunyuan"
        | "solar-open" | "grok-2" => Family::new(&[&qwen2]),
        "qwen35" => Family::new(&[&qwen35]),
        "seed-coder" => Family::new(&[&seed_coder]),
        "bailingmoe" | "bailingmoe2" | "llada-moe" => Family::new(&[BAILINGMOE]),
        "deepseek-llm" => Family::new(&[
            r"[\r\n]",
            DEEPSEEK_LLM_LETTERS,
            DEEPSEEK_LLM_PUNCT,
            r"\s+$",
            DEEPSEEK_CJK,
            r"\p{N}+",
        ]),
        "deepseek-coder" => Family::new(&[
            r"[\r\n]",
            r"\s?\p{L}+",
            r"\s?\p{P}+",
            DEEPSEEK_CJK,
            r"\p{N}",
        ]),
        "deepseek-v3" | "hunyuan-dense" | "hy_v4" | "joyai-llm" => {
            Family::new(&[r"\p{N}{1,3}", r"[一-龥぀-ゟ゠-ヿ]+", DEEPSEEK_V3_MAIN])
        }
        "youtu" => Family::new(&[YOUTU_CJK, &youtu_words]).ignoring_merges(),
        "falcon" => Family::new(&[r"[\p{P}\$\+<=>\^~\|`]+", GPT2, "[0-9][0-9][0-9]"]),
        "gpt-4o" | "llama4" | "kanana2" | "talkie" | "minimax-m2" => Family::new(&[&gpt4o]),
        "tekken" => Family::new(&[&tekken]).ignoring_merges().adding_bos(),
        // Merges run over whole lines; runs of newlines stay apart (merges never hold one).
        "gemma4" | "granite-embed-multi-311m" => Family::new(&[r"[^\n]+|[\n]+"])
            .escaping_spaces()
            .adding_bos(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words<'a>(name: &str, text: &'a str) -> Vec<&'a str> {
        let p = PreTokenizer::new(name).unwrap();
        p.split(text).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn every_name_compiles() {
        for name in [
            "default",
            "gpt-2",
            "smollm",
            "llama-bpe",
            "qwen2",
            "qwen35",
            "deepseek-llm",
            "deepseek-coder",
            "deepseek-v3",
            "youtu",
            "glm4",
            "falcon",
            "gpt-4o",
            "tekken",
            "seed-coder",
            "bailingmoe",
            "gemma4",
        ] {
            PreTokenizer::new(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert!(matches!(
            PreTokenizer::new("nonsense"),
            Err(TokenizerError::UnknownPreTokenizer(_))
        ));
    }

    #[test]
    fn smollm_isolates_digits_first() {
        assert_eq!(
            words("smollm", "abc 123  x"),
            ["abc", " ", "1", "2", "3", " ", " x"]
        );
        assert_eq!(words("gpt-2", "abc 123  x"), ["abc", " 123", " ", " x"]);
    }

    #[test]
    fn llama3_groups_three_digits_and_newlines() {
        assert_eq!(
            words("llama-bpe", "12345 it's\n\n  ok"),
            ["123", "45", " it", "'s", "\n\n", " ", " ok"]
        );
    }
}

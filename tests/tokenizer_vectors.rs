//! llama.cpp's own tokenizer test vectors: every vocabulary in its `models/ggml-vocab-*.gguf` that comes
//! with `.inp` (texts) and `.out` (the ids llama.cpp's test expects), tokenized as its test does (no
//! BOS, special tokens not parsed). `scripts/fetch-model.sh vocabs` puts them in models/vocab/.

use pollster::FutureExt as _;
use std::path::{Path, PathBuf};

use wick::gguf;
use wick::tokenizer::Tokenizer;

/// The vocabularies with vectors, by the name in their file name.
const VOCABULARIES: &[&str] = &[
    "bert-bge",
    "command-r",
    "deepseek-coder",
    "deepseek-llm",
    "falcon",
    "gemma-4",
    "gpt-2",
    "llama-bpe",
    "llama-spm",
    "mpt",
    "phi-3",
    "qwen2",
    "qwen35",
    "refact",
    "starcoder",
];

fn vocab_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/vocab")
}

/// The texts and the ids each should give, as llama.cpp's test-tokenizer-0 reads them.
fn vectors(dir: &Path, name: &str) -> Vec<(String, Vec<u32>)> {
    let read = |ext: &str| {
        let path = dir.join(format!("ggml-vocab-{name}.gguf.{ext}"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run scripts/fetch-model.sh vocabs)",
                path.display()
            )
        })
    };
    // Texts end at each separator; the last one too, where the file ends with one.
    let inp = read("inp");
    let sep = "\n__ggml_vocab_test__\n";
    let texts: Vec<String> = inp
        .strip_suffix(sep)
        .unwrap_or(&inp)
        .split(sep)
        .map(str::to_string)
        .collect();
    let ids: Vec<Vec<u32>> = read("out")
        .lines()
        .map(|l| l.split_whitespace().map(|t| t.parse().unwrap()).collect())
        .collect();
    assert_eq!(texts.len(), ids.len(), "{name}: .inp and .out disagree");
    texts.into_iter().zip(ids).collect()
}

fn tokenizer(dir: &Path, name: &str) -> Tokenizer {
    let path = dir.join(format!("ggml-vocab-{name}.gguf"));
    let src = gguf::FileSource::open(&path).unwrap();
    let header = gguf::read_header(&src).block_on().unwrap();
    Tokenizer::from_gguf(&header).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_vocabulary_gives_llama_cpps_ids() {
    let dir = vocab_dir();
    let mut failures = Vec::new();
    let mut count = 0;
    for name in VOCABULARIES {
        let tok = tokenizer(&dir, name);
        for (text, want) in vectors(&dir, name) {
            count += 1;
            let got = tok.encode(&text, false);
            if got != want {
                failures.push(format!(
                    "{name}: {text:?}\n   got  {got:?}\n   want {want:?}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} vectors differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn gemma4_starts_with_bos_and_decodes_spaces() {
    let tok = tokenizer(&vocab_dir(), "gemma-4");
    assert!(tok.add_bos(), "Gemma 4 always starts with BOS");
    assert_eq!(tok.bos(), Some(2));
    for text in [
        "Hello world",
        "  two  spaces\n\n\nand newlines",
        "Äpfel 🦙 ½",
    ] {
        let ids = tok.encode(text, false);
        assert_eq!(tok.decode(&ids, false), text);
    }
    let turn = tok.token_id("<turn|>").unwrap();
    assert!(tok.is_end_of_generation(turn));
    assert_eq!(
        tok.encode("<|turn>user\n", true)[0],
        tok.token_id("<|turn>").unwrap()
    );
}

/// A BERT input is [CLS] text [SEP], as llama.cpp's defaults for the bert tokenizer have it.
#[test]
fn bert_inputs_start_with_cls_and_end_with_sep() {
    let tok = tokenizer(&vocab_dir(), "bert-bge");
    assert!(tok.add_bos());
    assert_eq!(tok.bos(), Some(tok.token_id("[CLS]").unwrap()));
    assert_eq!(tok.end_of_input(), Some(tok.token_id("[SEP]").unwrap()));
    // Lowercased, split around punctuation, each word's first piece marked.
    let ids = tok.encode("Hello, World!", false);
    let texts: Vec<&str> = ids.iter().map(|&i| tok.token_text(i).unwrap()).collect();
    assert_eq!(
        texts,
        ["\u{2581}hello", "\u{2581},", "\u{2581}world", "\u{2581}!"]
    );
}

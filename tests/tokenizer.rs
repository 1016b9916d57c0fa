//! The tokenizer against llama.cpp's ids (goldens made by tests/goldens/make_tokenizer_goldens.py), plus
//! decoding, streaming, hostile metadata and pathological inputs.

use pollster::FutureExt as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value as Json;
use wick::gguf::{self, Header, Value};
use wick::tokenizer::{StreamDecoder, Tokenizer, TokenizerError};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_header(rel: &str) -> Header {
    let path = root().join(rel);
    assert!(
        path.exists(),
        "{} is missing: run scripts/fetch-model.sh to fetch the model",
        path.display()
    );
    let src = gguf::FileSource::open(&path).unwrap();
    gguf::read_header(&src).block_on().unwrap()
}

fn model_header() -> Header {
    read_header("models/SmolLM2-135M-Instruct.Q4_1.gguf")
}

fn golden(name: &str) -> Json {
    let path = root()
        .join("tests/goldens/tokenizer")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn ids(v: &Json) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// Replaces (or adds) one metadata key.
fn set(h: &mut Header, key: &str, value: Value) {
    h.metadata.retain(|(k, _)| k != key);
    h.metadata.push((key.to_string(), value));
}

/// Compares every golden string, with and without special-token parsing, and the special ids.
fn check(tok: &Tokenizer, g: &Json) {
    let label = format!("{} / {:?}", g["vocab"], g["pre"]);
    let mut bad = Vec::new();
    for case in g["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        for (special, key) in [(true, "ids"), (false, "ids_plain")] {
            let want = ids(&case[key]);
            let got = tok.encode(text, special);
            if got != want {
                bad.push(format!(
                    "{text:?} (special={special}):\n   got  {got:?}\n   want {want:?}"
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{label}: {} mismatches\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert_eq!(
        tok.vocab_size() as u64,
        g["n_vocab"].as_u64().unwrap(),
        "{label}"
    );
    assert_eq!(tok.bos().map(u64::from), g["bos"].as_u64(), "{label}: bos");
    assert_eq!(tok.eos().map(u64::from), g["eos"].as_u64(), "{label}: eos");
    assert_eq!(tok.eot().map(u64::from), g["eot"].as_u64(), "{label}: eot");
    assert_eq!(
        tok.add_bos(),
        g["add_bos"].as_bool().unwrap(),
        "{label}: add_bos"
    );
    assert_eq!(
        tok.end_of_generation_ids(),
        ids(&g["eog"]).as_slice(),
        "{label}: end-of-generation ids"
    );
}

#[test]
fn smollm2_matches_llama_cpp() {
    let tok = Tokenizer::from_gguf(&model_header()).unwrap();
    check(&tok, &golden("smollm"));
    assert!(tok.is_end_of_generation(2), "<|im_end|>");
    assert!(!tok.is_end_of_generation(1), "<|im_start|>");
    assert_eq!(tok.encode("<|im_start|>user\n", true), [1, 4093, 198]);
    assert!(tok.chat_template().unwrap().contains("<|im_start|>"));
}

#[test]
fn bpe_pre_tokenizers_match_llama_cpp() {
    for pre in [
        "llama-bpe",
        "qwen2",
        "deepseek-llm",
        "default",
        "deepseek-v3",
        "youtu",
        "glm4",
        "gpt-4o",
        "deepseek-coder",
    ] {
        let mut h = model_header();
        set(&mut h, "tokenizer.ggml.pre", Value::String(pre.into()));
        let tok = Tokenizer::from_gguf(&h).unwrap_or_else(|e| panic!("{pre}: {e}"));
        check(&tok, &golden(pre));
    }
}

#[test]
fn sentencepiece_matches_llama_cpp() {
    let mut h = read_header("tests/data/spm-tiny.gguf");
    check(&Tokenizer::from_gguf(&h).unwrap(), &golden("spm"));
    set(
        &mut h,
        "tokenizer.ggml.add_space_prefix",
        Value::Bool(false),
    );
    check(&Tokenizer::from_gguf(&h).unwrap(), &golden("spm-no-prefix"));
}

#[test]
fn decoding_gives_back_the_text() {
    let tok = Tokenizer::from_gguf(&model_header()).unwrap();
    for case in golden("smollm")["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        assert_eq!(tok.decode(&tok.encode(text, true), true), text);
    }
    // For display, control tokens are left out.
    assert_eq!(
        tok.decode(&tok.encode("<|im_start|>hi<|im_end|>", true), false),
        "hi"
    );

    let spm = Tokenizer::from_gguf(&read_header("tests/data/spm-tiny.gguf")).unwrap();
    let ids = spm.encode("Hello world 語ü", false);
    // The space prefix comes back as a leading space; ü has no token and went out as two byte tokens.
    assert_eq!(spm.decode(&ids, false), " Hello world 語ü");
    assert_eq!(spm.token_piece(spm.token_id("<0x0A>").unwrap()), b"\n");
    assert_eq!(spm.token_piece(spm.token_id("▁the").unwrap()), b" the");
}

#[test]
fn stream_decoder_holds_back_split_characters() {
    let tok = Tokenizer::from_gguf(&model_header()).unwrap();
    let text = "Emoji 👋🌍🧑‍💻 and 日本語 end";
    let ids = tok.encode(text, false);
    let mut dec = StreamDecoder::new();
    let mut out = String::new();
    let mut held_back = false;
    for &id in &ids {
        let chunk = dec.push(&tok, id);
        held_back |= chunk.is_empty() && !tok.token_piece(id).is_empty();
        out.push_str(&chunk);
    }
    out.push_str(&dec.finish());
    assert_eq!(out, text);
    assert!(held_back, "some token should end inside a character");

    // Control tokens: hidden by default, shown on request.
    let im_end = tok.token_id("<|im_end|>").unwrap();
    assert_eq!(StreamDecoder::new().push(&tok, im_end), "");
    assert_eq!(
        StreamDecoder::with_special().push(&tok, im_end),
        "<|im_end|>"
    );

    // A byte that can never start a character comes out as U+FFFD; an unfinished one at the end too.
    let byte = |b: u8| tok.token_id(&wick_byte_char(b).to_string()).unwrap();
    let mut dec = StreamDecoder::new();
    assert_eq!(dec.push(&tok, byte(0x80)), "\u{fffd}");
    assert_eq!(dec.push(&tok, byte(0xe6)), "");
    assert_eq!(dec.finish(), "\u{fffd}");
}

/// gpt2's byte-to-character table, written out here so the test does not lean on the code it checks.
fn wick_byte_char(b: u8) -> char {
    let printable = |b: u8| (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || b >= 0xae;
    if printable(b) {
        b as char
    } else {
        char::from_u32(0x100 + (0..b).filter(|&x| !printable(x)).count() as u32).unwrap()
    }
}

#[test]
fn bad_metadata_gives_clear_errors() {
    let base = model_header();
    let err = |h: &Header| {
        Tokenizer::from_gguf(h)
            .err()
            .expect("should fail")
            .to_string()
    };

    let mut h = base.clone();
    set(
        &mut h,
        "tokenizer.ggml.model",
        Value::String("wordpiece-9000".into()),
    );
    assert!(err(&h).contains("wordpiece-9000"), "{}", err(&h));

    let mut h = base.clone();
    set(
        &mut h,
        "tokenizer.ggml.pre",
        Value::String("mystery-pre".into()),
    );
    let e = Tokenizer::from_gguf(&h).err().unwrap();
    assert!(
        matches!(&e, TokenizerError::UnknownPreTokenizer(n) if n == "mystery-pre"),
        "{e}"
    );

    let mut h = base.clone();
    h.metadata.retain(|(k, _)| k != "tokenizer.ggml.tokens");
    assert!(err(&h).contains("tokenizer.ggml.tokens"));

    let mut h = base.clone();
    h.metadata.retain(|(k, _)| k != "tokenizer.ggml.merges");
    assert!(err(&h).contains("tokenizer.ggml.merges"));

    let mut h = base.clone();
    set(
        &mut h,
        "tokenizer.ggml.token_type",
        Value::Array(vec![Value::I32(1); 10]),
    );
    assert!(err(&h).contains("tokenizer.ggml.token_type"));

    let mut h = base.clone();
    set(
        &mut h,
        "tokenizer.ggml.tokens",
        Value::Array(vec![Value::String("a".into()), Value::U32(7)]),
    );
    assert!(err(&h).contains("tokenizer.ggml.tokens"));

    let mut h = base.clone();
    set(
        &mut h,
        "tokenizer.ggml.tokens",
        Value::Array(vec![Value::String("a".into()); 3]),
    );
    h.metadata.retain(|(k, _)| k != "tokenizer.ggml.token_type");
    assert!(err(&h).contains("twice"));

    // Out-of-range special ids and odd merge lines are ignored, not fatal.
    let mut h = base.clone();
    set(
        &mut h,
        "tokenizer.ggml.eos_token_id",
        Value::U32(4_000_000_000),
    );
    set(
        &mut h,
        "tokenizer.ggml.merges",
        Value::Array(vec![Value::String("x".into()), Value::String("".into())]),
    );
    let tok = Tokenizer::from_gguf(&h).unwrap();
    assert_eq!(tok.eos(), None);
    assert_eq!(tok.decode(&tok.encode("hello", false), false), "hello");
}

#[test]
fn pathological_inputs_finish_quickly() {
    let mut h = model_header();
    let smollm = Tokenizer::from_gguf(&h).unwrap();
    set(
        &mut h,
        "tokenizer.ggml.pre",
        Value::String("deepseek-llm".into()),
    );
    let deepseek = Tokenizer::from_gguf(&h).unwrap();
    set(
        &mut h,
        "tokenizer.ggml.pre",
        Value::String("llama-bpe".into()),
    );
    let llama3 = Tokenizer::from_gguf(&h).unwrap();
    let spm = Tokenizer::from_gguf(&read_header("tests/data/spm-tiny.gguf")).unwrap();

    // A megabyte in release builds; less where unoptimized code would take minutes.
    let mb: usize = if cfg!(debug_assertions) {
        1 << 16
    } else {
        1 << 20
    };
    let inputs = [
        "a".repeat(mb),
        " ".repeat(mb),
        format!("{}x", " ".repeat(mb)),
        "7".repeat(mb),
        "!".repeat(mb),
        "語".repeat(mb / 3),
        "👋".repeat(mb / 4),
        "<|im_start|>".repeat(mb / 12),
    ];
    for tok in [&smollm, &deepseek, &llama3, &spm] {
        for text in &inputs {
            let t = Instant::now();
            let ids = tok.encode(text, true);
            let took = t.elapsed();
            assert!(!ids.is_empty());
            assert!(
                took < Duration::from_secs(20),
                "{:?}... ({} bytes) took {took:?}",
                &text[..8],
                text.len()
            );
        }
    }
}

//! Embeddings against llama.cpp's (`Llama(embedding=True).embed`) and an f32 numpy reference's, on the
//! random dense files with their pooling set in the metadata, and on a random EmbeddingGemma file
//! (tests/goldens/make_embedding_goldens.py says what each case exercises): last-token pooling after
//! an added EOS (Qwen3-Embedding's layout), mean pooling, first-token pooling through Gemma 2's
//! post-norms, and EmbeddingGemma's bidirectional attention with a symmetric window and its dense
//! projections after the pooling. Decoders' inputs run in chunks of 8 tokens, so most span several
//! runs; the encoder's run whole. Then what a user gets wrong: a chat model asked for embeddings,
//! an input longer than the context, and the pooling named at load rather than in the file.

use crate::common;

use common::edit_gguf::{set, variant};
use common::gpu;
use pollster::FutureExt as _;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use wick::embeddings::{cosine, Pooling};
use wick::engine::LoadOptions;
use wick::gguf::{ByteSource, FileSource};
use wick::gpu::Gpu;
use wick::session::Session;

/// Least cosine allowed between Wick's vector and either reference's.
const MIN_COSINE: f64 = 0.9999;
/// Tokens per run: small, so inputs of 11 to 62 tokens take one to eight runs.
const CHUNK: u32 = 8;

fn data(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The context the goldens were made with.
const N_CTX: u32 = 96;

fn load(gpu: &Arc<Gpu>, source: &dyn ByteSource, pooling: Option<Pooling>) -> Session {
    let options = LoadOptions {
        n_ctx: N_CTX,
        batch: Some(CHUNK),
        pooling,
        ..Default::default()
    };
    Session::load(gpu.clone(), source, &options, &mut |_, _| {})
        .block_on()
        .unwrap()
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

/// Embeds every input of a golden record in one call (packed into shared runs, several fills of
/// the cache) and compares; returns the vectors.
fn check_record(session: &mut Session, record: &Value) -> Vec<Vec<f32>> {
    let file = record["file"].as_str().unwrap();
    let inputs = record["inputs"].as_array().unwrap();
    let mut lists = Vec::new();
    for input in inputs {
        let text = input["text"].as_str().unwrap();
        let ids = session.tokenize_input(text);
        let want: Vec<u32> = serde_json::from_value(input["ids"].clone()).unwrap();
        assert_eq!(ids, want, "{file}: tokens of {text:?}");
        lists.push(ids);
    }
    let lists: Vec<&[u32]> = lists.iter().map(Vec::as_slice).collect();
    let vectors = session.embed(&lists).block_on().unwrap();
    for ((input, ids), v) in inputs.iter().zip(&lists).zip(&vectors) {
        let text = input["text"].as_str().unwrap();
        let norm: f64 = v.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{file}: |v| = {norm}");
        let llama_cpp = cosine(v, &floats(&input["llama_cpp"]));
        let f32_ref = cosine(v, &floats(&input["f32"]));
        eprintln!(
            "{file} ({}): {} tokens, cosine with llama.cpp {llama_cpp:.7}, with f32 {f32_ref:.7}",
            record["pooling"],
            ids.len()
        );
        assert!(llama_cpp >= MIN_COSINE, "{file}: {text:?} vs llama.cpp");
        assert!(
            f32_ref >= MIN_COSINE,
            "{file}: {text:?} vs the f32 reference"
        );
    }
    vectors
}

/// The record's file, with its pooling (and EOS) set in the metadata where the golden script set them.
fn embedding_file(record: &Value) -> Box<dyn ByteSource> {
    let file = data(record["file"].as_str().unwrap());
    if record["set_here"] == false {
        return Box::new(FileSource::open(&file).unwrap());
    }
    let pooling = record["pooling"].as_str().unwrap();
    let kind = match pooling {
        "mean" => 1,
        "cls" => 2,
        "last" => 3,
        other => panic!("pooling {other}"),
    };
    let add_eos = record["add_eos"].as_bool().unwrap();
    let header = wick::gguf::read_header(&FileSource::open(&file).unwrap())
        .block_on()
        .unwrap();
    let arch = header.architecture().unwrap().to_string();
    let edited = variant(&file, |metadata, _| {
        set(
            metadata,
            &format!("{arch}.pooling_type"),
            wick::gguf::Value::U32(kind),
        );
        if add_eos {
            set(
                metadata,
                "tokenizer.ggml.add_eos_token",
                wick::gguf::Value::Bool(true),
            );
        }
    });
    Box::new(edited)
}

#[test]
fn embeddings_match_llama_cpp_and_f32_reference() {
    let Some(gpu) = gpu() else { return };
    let golden: Value = serde_json::from_str(include_str!("goldens/embeddings.json")).unwrap();
    for record in golden["records"].as_array().unwrap() {
        let source = embedding_file(record);
        let mut session = load(&gpu, source.as_ref(), None);
        let want = Pooling::from_name(record["pooling"].as_str().unwrap());
        assert_eq!(session.engine.pooling(), want, "the pooling the file names");
        let vectors = check_record(&mut session, record);

        // Alone, an input gets the vector it got packed with the others (and the cache is free
        // again after them).
        let first = &record["inputs"][0];
        let ids = session.tokenize_input(first["text"].as_str().unwrap());
        let again = session.embed(&[&ids]).block_on().unwrap();
        assert!(cosine(&again[0], &vectors[0]) > 0.999_999);
    }
}

#[test]
fn pooling_named_at_load_embeds_a_chat_model() {
    let Some(gpu) = gpu() else { return };
    let golden: Value = serde_json::from_str(include_str!("goldens/embeddings.json")).unwrap();
    // llama3's record pools by the mean and adds no EOS: the plain file with the pooling named at
    // load is the same model.
    let record = golden["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["pooling"] == "mean" && r["add_eos"] == false)
        .unwrap();
    let source = FileSource::open(data(record["file"].as_str().unwrap())).unwrap();
    let mut session = load(&gpu, &source, Some(Pooling::Mean));
    check_record(&mut session, record);
}

#[test]
fn chat_models_and_long_inputs_are_refused_plainly() {
    let Some(gpu) = gpu() else { return };
    let source = FileSource::open(data("tests/data/random-llama3.gguf")).unwrap();
    let mut session = load(&gpu, &source, None);
    assert_eq!(session.engine.pooling(), None);
    let ids = session.tokenize_input("hello");
    let e = session.embed(&[&ids]).block_on().unwrap_err().to_string();
    assert!(e.contains("no pooling"), "{e}");
    // The session still answers as a chat model.
    session.engine.prefill(&ids).block_on().unwrap();

    let mut session = load(&gpu, &source, Some(Pooling::Last));
    let e = session
        .embed(&[&[1; 97]])
        .block_on()
        .unwrap_err()
        .to_string();
    assert!(e.contains("context is full (96 tokens)"), "{e}");
    let e = session.embed(&[&[]]).block_on().unwrap_err().to_string();
    assert!(e.contains("empty"), "{e}");
}

#[test]
fn rank_pooling_is_refused_at_load() {
    let Some(gpu) = gpu() else { return };
    let file = data("tests/data/random-llama3.gguf");
    let source = variant(&file, |metadata, _| {
        set(metadata, "llama.pooling_type", wick::gguf::Value::U32(4));
    });
    let options = LoadOptions {
        n_ctx: 64,
        ..Default::default()
    };
    let e = Session::load(gpu, &source, &options, &mut |_, _| {})
        .block_on()
        .err()
        .expect("a reranker's pooling is refused")
        .to_string();
    assert!(e.contains("rank pooling"), "{e}");
}

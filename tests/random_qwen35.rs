//! Tiny random-weight qwen35 (Qwen3.5) files in llama.cpp's exact layout (tests/data/random-qwen35-*.gguf,
//! made by tests/goldens/make_random_qwen35.py, whose docstring says what they exercise; goldens in
//! tests/goldens/random-qwen35.json): Gated DeltaNet layers beside gated attention, against llama.cpp and an
//! f32 numpy reference of Wick's own (tests/goldens/numpy_qwen35.py).
//! - 24 tokens teacher-forced with all logits at every position, perplexity, and a 12-token greedy run
//!   (tests/common/random_model.rs, as for the other families);
//! - 300 greedy tokens against both references by the near-tie method, so that a drifting state shows;
//! - prompts in chunks (64, 7) equal to token-at-a-time decoding;
//! - a conversation that regenerates, edits and continues gives the replies fresh loads give, going back
//!   to the state snapshots where it can;
//! - files with a missing or mis-shaped ssm tensor, an interval that does not divide the layers, or a state
//!   the adapter cannot hold, refused at load with a message naming it.

use crate::common;

use common::edit_gguf::{set, variant};
use common::fidelity::{check_greedy, Tolerance};
use common::gpu;
use common::random_model::{check_all, check_text_perplexity};
use pollster::FutureExt as _;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wick::chat_template::{ChatMessage, Extras};
use wick::engine::{Engine, LoadOptions};
use wick::gguf::write::TensorSpec;
use wick::gguf::{FileSource, MemorySource, Value};
use wick::gpu::Gpu;
use wick::reply::Reply;
use wick::sampler::{Sampler, SamplerConfig};
use wick::session::{Overflow, Session};

/// Largest |Wick - f32 reference| on any logit; the reference is rounded to 4 decimals.
const TOL_F32: f32 = 0.005;
/// llama.cpp's CPU path rounds activations to f16 before its F16 matrix products: its logits are up to
/// 0.042 from the f32 reference's on the F16 file.
const LLAMA_CPP_F16: Tolerance = Tolerance {
    logit: 0.1,
    clear_gap: 0.1,
};
/// Before quantized matrix products it rounds them to 8 bits, which puts its logits up to 1.37 from the
/// f32 reference's on the Q8_0 and Q4_K files (tests/goldens/make_random_qwen35.py simulates the
/// rounding and lands within 0.71 of llama.cpp): the f32 reference is the tight check there.
const LLAMA_CPP_QUANTIZED: Tolerance = Tolerance {
    logit: 1.5,
    clear_gap: 1.5,
};

fn llama_cpp(record: &Json) -> Tolerance {
    match record["file"].as_str().unwrap().ends_with("f16.gguf") {
        true => LLAMA_CPP_F16,
        false => LLAMA_CPP_QUANTIZED,
    }
}
/// Against the f32 reference over 300 steps: a state that drifts shows here.
const F32_LONG: Tolerance = Tolerance {
    logit: 0.01,
    clear_gap: 0.02,
};

fn golden() -> Json {
    serde_json::from_str(include_str!("goldens/random-qwen35.json")).unwrap()
}

fn path(record: &Json) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(record["file"].as_str().unwrap())
}

fn load(gpu: &Arc<Gpu>, source: &dyn wick::gguf::ByteSource, n_ctx: u32, batch: u32) -> Engine {
    let options = LoadOptions {
        n_ctx,
        batch: Some(batch),
        scoring: false,
        ..Default::default()
    };
    Engine::load(gpu.clone(), source, &options, &mut |_, _| {})
        .block_on()
        .unwrap()
}

#[test]
fn random_qwen35_matches_references() {
    let Some(gpu) = gpu() else { return };
    check_references(&gpu);
}

/// The same with each RMSNorm done in the kernel of the product that reads it (a GPU's default,
/// which lavapipe does not take unless told): the Gated DeltaNet layers' input norm in their
/// projection's, the gated attention layers' in q/k/v's, the feed-forward's in gate and up's.
#[test]
fn random_qwen35_with_norms_fused_match_references() {
    let Some(gpu) = common::gpu_with_norms_fused() else {
        return;
    };
    check_references(&gpu);
}

fn check_references(gpu: &Arc<Gpu>) {
    let golden = golden();
    let mut reports = Vec::new();
    for record in golden["records"].as_array().unwrap() {
        let one = serde_json::json!({ "records": [record] });
        reports.extend(check_all(gpu, &one, TOL_F32, llama_cpp(record)));
    }
    assert_eq!(reports.len(), 3);
}

#[test]
fn random_qwen35_greedy_300_tokens() {
    let Some(gpu) = gpu() else { return };
    for record in golden()["records"].as_array().unwrap() {
        let source = FileSource::open(path(record)).unwrap();
        let mut engine = load(&gpu, &source, 512, 64);
        let f32_ref = check_greedy(&mut engine, &record["f32_greedy_long"], F32_LONG);
        let llama = check_greedy(&mut engine, &record["greedy_long"], llama_cpp(record));
        eprintln!(
            "{}: 300 greedy steps, f32 reference {f32_ref:?}, llama.cpp {llama:?}",
            record["file"]
        );
        assert!(f32_ref.same >= 295, "{}: {f32_ref:?}", record["file"]);
    }
}

#[test]
fn random_qwen35_chunked_prefill_equals_token_at_a_time() {
    let Some(gpu) = gpu() else { return };
    let record = &golden()["records"][0];
    let source = FileSource::open(path(record)).unwrap();
    let n_vocab = 512;
    let prompt: Vec<u32> = (0..150u32)
        .map(|i| (i * 7919 + 13) % (n_vocab - 1))
        .collect();
    let mut one = load(&gpu, &source, 256, 1);
    let want = one.prefill(&prompt).block_on().unwrap();
    let after: Vec<Vec<f32>> = (0..4)
        .map(|t| one.step(t, true).block_on().unwrap().unwrap())
        .collect();
    for batch in [64, 7] {
        let mut chunked = load(&gpu, &source, 256, batch);
        let got = chunked.prefill(&prompt).block_on().unwrap();
        let err = max_abs(&got, &want);
        assert!(
            err < 1e-3,
            "chunks of {batch}: logits {err} from token at a time"
        );
        for (t, want) in after.iter().enumerate() {
            let got = chunked.step(t as u32, true).block_on().unwrap().unwrap();
            let err = max_abs(&got, want);
            assert!(err < 1e-3, "chunks of {batch}, then step {t}: {err}");
        }
    }
}

/// `wick perplexity`'s method over tests/data/perplexity.txt (4 chunks of 128) against llama.cpp's and
/// the float64 reference's (tests/goldens/make_random_perplexity.py qwen35; llama.cpp is 0.03% from the
/// reference on the F16 file, its 8-bit activations move it 1.7% on Q8_0 and 0.8% on Q4_K).
#[test]
fn random_qwen35_perplexity_matches_references() {
    let Some(gpu) = gpu() else { return };
    let golden = include_str!("goldens/random-qwen35-perplexity.json");
    check_text_perplexity(&gpu, &serde_json::from_str(golden).unwrap());
}

fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// A greedy reply of 24 tokens, and how many prompt tokens were run for it.
fn reply(session: &mut Session, prompt: &[u32]) -> (Vec<u32>, usize) {
    let mut sampler = Sampler::new(SamplerConfig::greedy());
    let c = session
        .complete(prompt, Reply::new(24, &[]), &mut sampler, &mut |_| true)
        .block_on()
        .unwrap();
    (c.tokens, c.prompt_processed)
}

fn session(gpu: &Arc<Gpu>, file: &Path) -> Session {
    let source = FileSource::open(file).unwrap();
    let options = LoadOptions {
        n_ctx: 256,
        ..Default::default()
    };
    Session::load(gpu.clone(), &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap()
}

#[test]
fn random_qwen35_conversation_rewinds_equal_fresh_loads() {
    let Some(gpu) = gpu() else { return };
    let file = path(&golden()["records"][0]);
    let fresh = |prompt: &[u32]| reply(&mut session(&gpu, &file), prompt).0;
    let a: Vec<u32> = (0..90u32).map(|i| (i * 31 + 5) % 500).collect();
    let mut s = session(&gpu, &file);

    let (first, processed) = reply(&mut s, &a);
    assert_eq!(processed, a.len());
    // Regenerate: back to the snapshot where the prompt ended, only its last token run again.
    let (again, processed) = reply(&mut s, &a);
    assert_eq!((&again, processed), (&first, 1), "regenerated");
    assert_eq!(first, fresh(&a));

    // Continue the conversation: the reply's state is kept, only the new tokens run.
    let mut c = [a.clone(), first.clone(), vec![7, 8, 9, 10]].concat();
    let (next, processed) = reply(&mut s, &c);
    // The reply's tokens are in the state but its last; that and the 4 new ones run.
    assert_eq!(processed, 5, "continued");
    assert_eq!(next, fresh(&c));

    // Edit the last message: back to the snapshot at the end of the first prompt.
    c.truncate(a.len() + first.len());
    c.extend([11, 12, 13]);
    let (edited, processed) = reply(&mut s, &c);
    assert_eq!(processed, first.len() + 3 + 1, "edited");
    assert_eq!(edited, fresh(&c));

    // Edit inside the first prompt (a dropped turn or an edited first message): from the start.
    let mut b = a.clone();
    b[40] = 499;
    let (changed, processed) = reply(&mut s, &b);
    assert_eq!(processed, b.len(), "changed early");
    assert_eq!(changed, fresh(&b));
}

/// A session on `file` (which carries Qwen3.5's chat template) for `n_ctx` positions.
fn chat_session(gpu: &Arc<Gpu>, file: &Path, n_ctx: u32) -> Session {
    let source = FileSource::open(file).unwrap();
    let options = LoadOptions {
        n_ctx,
        ..Default::default()
    };
    Session::load(gpu.clone(), &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap()
}

/// A greedy chat reply of up to `max` tokens; the conversation as the chat left it (old turns dropped
/// where `overflow` says so).
fn chat(
    s: &mut Session,
    messages: &[ChatMessage],
    max: usize,
    overflow: Overflow,
) -> (String, Vec<ChatMessage>) {
    let mut messages = messages.to_vec();
    let mut sampler = Sampler::new(SamplerConfig::greedy());
    let c = s
        .chat(
            &mut messages,
            &Extras::default(),
            (max, &[]),
            &mut sampler,
            overflow,
            &mut |_| true,
        )
        .block_on()
        .unwrap();
    // Qwen3.5's template opens the reasoning: a reply's text is its reasoning, then its answer.
    (c.reasoning + "\n" + &c.text, messages)
}

/// Qwen3.5's template ends the prompt inside `<think>`: a chat reply's text up to `</think>` is its
/// reasoning, the rest its answer, each trimmed, and the pieces streamed say the same. The
/// reference is the raw reply to the rendered prompt, split here by hand.
#[test]
fn random_qwen35_reasoning_is_read_apart_from_the_answer() {
    let Some(gpu) = gpu() else { return };
    let file = path(&golden()["records"][0]);
    let mut s = chat_session(&gpu, &file, 256);
    let messages = vec![ChatMessage::new("user", "What is 2 + 2?")];
    let prompt = s.chat_prompt(&messages, &Extras::default()).unwrap();
    assert!(prompt.ends_with("<think>\n"), "{prompt:?}");
    let tokens = s.tokenize_prompt(&prompt);
    let greedy = || Sampler::new(SamplerConfig::greedy());
    let raw = s
        .complete(&tokens, Reply::new(20, &[]), &mut greedy(), &mut |_| true)
        .block_on()
        .unwrap()
        .text;
    let (reasoning, answer) = match raw.find("</think>") {
        Some(at) => (raw[..at].trim(), raw[at + "</think>".len()..].trim_start()),
        None => (raw.trim(), ""),
    };
    assert!(!reasoning.is_empty(), "{raw:?}");

    let (mut streamed_reasoning, mut streamed_text) = (String::new(), String::new());
    let mut messages = messages;
    let c = s
        .chat(
            &mut messages,
            &Extras::default(),
            (20, &[]),
            &mut greedy(),
            Overflow::Stop,
            &mut |piece| {
                streamed_reasoning += piece.reasoning;
                streamed_text += piece.text;
                true
            },
        )
        .block_on()
        .unwrap();
    assert_eq!((c.reasoning.as_str(), c.text.as_str()), (reasoning, answer));
    assert_eq!((streamed_reasoning, streamed_text), (c.reasoning, c.text));
}

#[test]
fn random_qwen35_chat_turns_equal_fresh_loads() {
    let Some(gpu) = gpu() else { return };
    let file = path(&golden()["records"][0]);
    let fresh = |messages: &[ChatMessage], n_ctx: u32, overflow: Overflow| {
        chat(
            &mut chat_session(&gpu, &file, n_ctx),
            messages,
            16,
            overflow,
        )
    };
    let stop = Overflow::Stop;
    let mut s = chat_session(&gpu, &file, 512);
    let mut messages = vec![
        ChatMessage::new("system", "You are terse."),
        ChatMessage::new("user", "What is the capital of France?"),
    ];
    let (first, _) = chat(&mut s, &messages, 16, stop);
    assert!(first.trim().len() > 8, "{first:?}");
    assert_eq!(first, fresh(&messages, 512, stop).0);
    // Regenerate.
    assert_eq!(chat(&mut s, &messages, 16, stop).0, first, "regenerated");
    // The next turn, then an edit of it.
    messages.push(ChatMessage::new("assistant", first.clone()));
    messages.push(ChatMessage::new("user", "And of Spain?"));
    let (second, _) = chat(&mut s, &messages, 16, stop);
    assert_eq!(second, fresh(&messages, 512, stop).0, "next turn");
    messages.last_mut().unwrap().content = "And of Italy, then?".into();
    let (edited, _) = chat(&mut s, &messages, 16, stop);
    assert_eq!(edited, fresh(&messages, 512, stop).0, "edited");

    // A context the conversation outgrows: the oldest turns go, as a fresh load drops them.
    messages.push(ChatMessage::new("assistant", edited));
    messages.push(ChatMessage::new("user", "Name three rivers there, please."));
    let drop = Overflow::DropOldestTurns;
    let mut small = chat_session(&gpu, &file, 200);
    let (_, _) = chat(&mut small, &messages[..2], 16, drop);
    let (reply, kept) = chat(&mut small, &messages, 16, drop);
    let (want, want_kept) = fresh(&messages, 200, drop);
    assert!(kept.len() < messages.len(), "no turn was dropped");
    assert_eq!(kept.len(), want_kept.len());
    assert_eq!(reply, want, "after dropping old turns");
}

#[test]
fn random_qwen35_next_token_prediction_layers_are_ignored() {
    let Some(gpu) = gpu() else { return };
    let file = path(&golden()["records"][0]);
    // An MTP block after the model's 6, as the converter writes Qwen3.5's: a full-attention block
    // (here layer 5's tensors) and the nextn projections.
    let with_mtp = variant(&file, |m, t| {
        set(m, "qwen35.block_count", Value::U32(7));
        m.push(("qwen35.nextn_predict_layers".into(), Value::U32(1)));
        let block: Vec<(TensorSpec, Vec<u8>)> = t
            .iter()
            .filter(|(s, _)| s.name.starts_with("blk.5."))
            .map(|(s, data)| {
                let name = s.name.replacen("blk.5.", "blk.6.", 1);
                (TensorSpec { name, ..s.clone() }, data.clone())
            })
            .collect();
        t.extend(block);
        let f32 = |name: &str, dims: Vec<u64>| {
            let n = dims.iter().product::<u64>() as usize;
            let spec = TensorSpec {
                name: name.into(),
                dims,
                ty: wick::gguf::GgmlType::F32,
            };
            (spec, vec![0u8; n * 4])
        };
        t.push(f32("blk.6.nextn.eh_proj.weight", vec![512, 256]));
        t.push(f32("blk.6.nextn.enorm.weight", vec![256]));
        t.push(f32("blk.6.nextn.hnorm.weight", vec![256]));
    });
    let plain = FileSource::open(&file).unwrap();
    let (mut a, mut b) = (load(&gpu, &plain, 64, 64), load(&gpu, &with_mtp, 64, 64));
    let prompt = [511, 83, 334, 360, 296, 7, 185, 46];
    let (la, lb) = (
        a.prefill(&prompt).block_on().unwrap(),
        b.prefill(&prompt).block_on().unwrap(),
    );
    assert_eq!(la, lb);
}

/// On demand, at a real model's dimensions: Wick's greedy decode of a Qwen3.5 shape file
/// (scripts/make-qwen35-shape.py; `WICK_QWEN35_SHAPE` names it) against llama.cpp's
/// (scripts/qwen35-shape-greedy.py writes target/FILE.greedy.json) by the near-tie method. llama.cpp's
/// 8-bit activations over 24 layers move its logits further from exact math than on the tiny files.
#[test]
#[ignore]
fn shape_file_greedy_against_llama_cpp() {
    let Some(gpu) = gpu() else { return };
    let file = PathBuf::from(std::env::var("WICK_QWEN35_SHAPE").expect("WICK_QWEN35_SHAPE=FILE"));
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/{name}.greedy.json"));
    let golden: Json = serde_json::from_str(&std::fs::read_to_string(golden).unwrap()).unwrap();
    let source = FileSource::open(&file).unwrap();
    let mut engine = load(&gpu, &source, 512, 64);
    let tolerance = Tolerance {
        logit: 2.0,
        clear_gap: 2.0,
    };
    let agreement = check_greedy(&mut engine, &golden, tolerance);
    eprintln!("{name}: {agreement:?}");
}

#[test]
fn random_qwen35_bad_files_are_refused() {
    let Some(gpu) = gpu() else { return };
    let file = path(&golden()["records"][0]);
    let refused = |source: MemorySource, want: &str| {
        let options = LoadOptions::default();
        let err = match Engine::load(gpu.clone(), &source, &options, &mut |_, _| {}).block_on() {
            Ok(_) => panic!("loaded; expected an error naming {want:?}"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(want), "{err:?} does not name {want:?}");
    };
    refused(
        variant(&file, |_, t| t.retain(|(s, _)| s.name != "blk.1.ssm_a")),
        "blk.1.ssm_a",
    );
    refused(
        variant(&file, |_, t| {
            let (s, data) = t
                .iter_mut()
                .find(|(s, _)| s.name == "blk.0.ssm_norm.weight")
                .unwrap();
            s.dims[0] /= 2;
            data.truncate(data.len() / 2);
        }),
        "blk.0.ssm_norm.weight",
    );
    refused(
        variant(&file, |_, t| {
            t.retain(|(s, _)| s.name != "blk.0.ssm_conv1d.weight")
        }),
        "blk.0.ssm_conv1d.weight",
    );
    refused(
        variant(&file, |m, _| {
            set(m, "qwen35.full_attention_interval", Value::U32(4))
        }),
        "full_attention_interval",
    );
    // A state one binding cannot hold: heads of 256, as many as it takes on this adapter.
    let heads = (gpu.max_binding() / (256 * 256 * 4) + 2) as u32 & !1;
    refused(
        variant(&file, |m, _| {
            set(m, "qwen35.ssm.state_size", Value::U32(256));
            set(m, "qwen35.ssm.time_step_rank", Value::U32(heads));
            set(m, "qwen35.ssm.inner_size", Value::U32(heads * 256));
        }),
        "exceeds the adapter's largest binding",
    );
    refused(
        variant(&file, |m, _| {
            set(m, "qwen35.ssm.inner_size", Value::U32(100))
        }),
        "ssm.inner_size",
    );
}

//! Qwen3.5's vision projector against llama.cpp's libmtmd and an f64 numpy reference
//! (tests/goldens/make_random_qwen35_vision.py): a random-weight qwen3vl mmproj file in llama.cpp's
//! layout; three images of other shapes (100 x 75, scaled to 12 x 10 patches, 6 x 5 tokens; 37 x 120,
//! to 4 x 16 patches; the first with a budget of 48 to 64 tokens, scaled up to 8 x 6), their tokens
//! compared row by row. Then the random Qwen3.5 text model (linear-attention layers beside gated
//! attention, interleaved multimodal RoPE) reading a prompt with the image's tokens in place, against
//! llama.cpp's logits after it and its greedy reply: the image's tokens share a position, turned
//! further by their row and column, and the text after it resumes 6 positions on, not 30, in prompt
//! runs that hold the image whole or start at it; a session placing the image between Qwen's
//! markers; and both images in one prompt, the second placed where the text after the first left the
//! positions.

use crate::common;

use common::gpu;
use common::vision::{check_image_prompt, check_tokens, data, golden, picture, prompt_with_rows};
use pollster::FutureExt as _;
use serde_json::Value;
use std::sync::Arc;
use wick::engine::{Engine, LoadOptions};
use wick::gguf::{read_header, FileSource};
use wick::gpu::Gpu;
use wick::reply::Reply;
use wick::session::Session;
use wick::vision::{Projector, TokenBudget, TokenGrid};

/// Least cosine allowed between a token's row and llama.cpp's (whose CPU rounds activations to
/// f16), and the f64 reference's.
const LEAST_COSINES: [(&str, f64); 2] = [("llama_cpp", 0.9999), ("f64", 0.99999)];
/// Most a logit after the image prompt may differ from llama.cpp's, whose CPU path keeps an f16 KV
/// cache (tests/random_qwen35.rs sees 0.04 on this file without images). Wick is 0.017 from it;
/// the rotation's semantics move it far more: the image's tokens at consecutive positions as text
/// put a logit 1.95 away, their rows and columns swapped 0.44, all at one position without their
/// rows and columns 0.28.
const LOGIT_TOLERANCE: f32 = 0.1;

fn qwen_golden() -> Value {
    golden("tests/goldens/random-qwen35-vision.json")
}

fn projector_within(gpu: Arc<Gpu>, budget: TokenBudget) -> Result<Projector, wick::Error> {
    let g = qwen_golden();
    let source = FileSource::open(data(g["mmproj"].as_str().unwrap())).unwrap();
    let header = read_header(&source).block_on().unwrap();
    Projector::load(gpu, (&header, &source), budget, &mut |_, _| {}).block_on()
}

fn projector(gpu: Arc<Gpu>) -> Projector {
    projector_within(gpu, TokenBudget::default()).unwrap()
}

#[test]
fn qwen35_image_tokens_match_llama_cpp_and_f64() {
    let Some(gpu) = gpu() else { return };
    let g = qwen_golden();
    let projector = projector(gpu);
    assert_eq!(projector.width(), 128);
    assert_eq!(projector.max_tokens(), 4096);
    assert_eq!(projector.markers(), ("<|vision_start|>", "<|vision_end|>"));
    for case in [&g, &g["tall"]] {
        let image = picture(case["image"].as_str().unwrap());
        let grid = &case["grid"];
        let want = TokenGrid {
            cols: grid["cols"].as_u64().unwrap() as u32,
            rows: grid["rows"].as_u64().unwrap() as u32,
        };
        assert_eq!(projector.token_grid(&image).unwrap(), want);
        check_tokens(&projector, case, LEAST_COSINES);
    }
}

/// A budget of 48 to 64 tokens, as llama.cpp's --image-min-tokens and --image-max-tokens: the image
/// of 30 tokens otherwise is scaled up to 48, against llama.cpp's and f64's with the same budget.
#[test]
fn a_token_budget_sizes_qwen_images_as_llama_cpp_does() {
    let Some(gpu) = gpu() else { return };
    let case = &qwen_golden()["budget"];
    let budget = TokenBudget {
        min_tokens: Some(case["min_tokens"].as_u64().unwrap() as u32),
        max_tokens: Some(case["max_tokens"].as_u64().unwrap() as u32),
    };
    let projector = projector_within(gpu, budget).unwrap();
    check_tokens(&projector, case, LEAST_COSINES);
}

/// The text model with the image's rows injected and prompt runs of `batch` tokens, and the golden's
/// prompt with the rows' ids in place of its -1s.
fn image_prompt(gpu: Arc<Gpu>, batch: u32) -> (Engine, Vec<u32>) {
    let g = qwen_golden();
    let projector = projector(gpu.clone());
    let image = picture(g["image"].as_str().unwrap());
    let rows = projector.encode(&image).block_on().unwrap();
    let grid = projector.token_grid(&image).unwrap();
    let source = FileSource::open(data(g["text_model"].as_str().unwrap())).unwrap();
    let options = LoadOptions {
        n_ctx: 256,
        batch: Some(batch),
        ..Default::default()
    };
    let mut engine = Engine::load(gpu, &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    engine.hold_image(0, grid, rows).unwrap();
    let prompt = prompt_with_rows(&g, engine.n_vocab());
    (engine, prompt)
}

#[test]
fn qwen35_reads_an_image_prompt_as_llama_cpp_does() {
    let Some(gpu) = gpu() else { return };
    let g = qwen_golden();
    // 73 tokens, the image at 22..52. Runs of 128 take it whole; runs of 40 end before it, the
    // second starts at it. The reply's steps turn 24 positions behind their cache rows.
    for batch in [128, 40] {
        let (mut engine, prompt) = image_prompt(gpu.clone(), batch);
        let label = format!("runs of {batch}");
        check_image_prompt(&mut engine, &prompt, &g, LOGIT_TOLERANCE, &label);
    }
}

/// Both test images in one prompt, through a session as `wick chat` reads them: the prompt's tokens as
/// mtmd's, then the logits after it and the greedy reply against llama.cpp's, in runs that hold the
/// whole prompt and in runs of 40 that cut it between the images.
#[test]
fn qwen35_reads_two_images_in_one_prompt_as_llama_cpp_does() {
    let Some(gpu) = gpu() else { return };
    let g = &qwen_golden()["two_images"];
    let images: Vec<_> = (g["images"].as_array().unwrap().iter())
        .map(|path| picture(path.as_str().unwrap()))
        .collect();
    let source = FileSource::open(data(qwen_golden()["text_model"].as_str().unwrap())).unwrap();
    for batch in [128, 40] {
        let options = LoadOptions {
            n_ctx: 256,
            batch: Some(batch),
            ..Default::default()
        };
        let mut session = Session::load(gpu.clone(), &source, &options, &mut |_, _| {})
            .block_on()
            .unwrap();
        session.attach_projector(projector(gpu.clone())).unwrap();
        let text = g["prompt_text"].as_str().unwrap();
        let prompt = session
            .tokenize_prompt_with_images(text, &images)
            .block_on()
            .unwrap();
        let want = prompt_with_rows(g, session.engine.n_vocab());
        assert_eq!(
            prompt, want,
            "the prompt's tokens, each image's at its marker"
        );
        let label = format!("two images, runs of {batch}");
        check_image_prompt(&mut session.engine, &prompt, g, LOGIT_TOLERANCE, &label);
    }
}

#[test]
fn a_session_places_a_qwen35_image_between_its_markers() {
    let Some(gpu) = gpu() else { return };
    let g = qwen_golden();
    let source = FileSource::open(data(g["text_model"].as_str().unwrap())).unwrap();
    let options = LoadOptions {
        n_ctx: 256,
        batch: Some(64),
        ..Default::default()
    };
    let mut session = Session::load(gpu.clone(), &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    session.attach_projector(projector(gpu)).unwrap();
    let image = picture(g["image"].as_str().unwrap());
    let text = g["prompt_text"].as_str().unwrap();
    let prompt = session
        .tokenize_prompt_with_images(text, std::slice::from_ref(&image))
        .block_on()
        .unwrap();
    let want = prompt_with_rows(&g, session.engine.n_vocab());
    assert_eq!(
        prompt, want,
        "the prompt's tokens, the image's at mtmd's place"
    );
    let greedy: Vec<u32> = (g["greedy"].as_array().unwrap().iter())
        .take(3)
        .map(|s| s["id"].as_u64().unwrap() as u32)
        .collect();
    let c = session
        .complete(
            &prompt,
            Reply::new(3, &[]),
            &mut common::greedy(),
            &mut |_| true,
        )
        .block_on()
        .unwrap();
    assert_eq!(
        c.tokens, greedy,
        "the greedy reply's first tokens (gaps above 0.7)"
    );
}

/// A projector made for the other kind of text model is refused by name, though the widths agree:
/// Gemma 4's (its image tokens rotate as text) by the Qwen3.5 model, Qwen's by the Gemma 4 model.
#[test]
fn projectors_and_text_models_that_rotate_images_differently_are_refused() {
    let Some(gpu) = gpu() else { return };
    let load_projector = |rel: &str| {
        let source = FileSource::open(data(rel)).unwrap();
        let header = read_header(&source).block_on().unwrap();
        let budget = TokenBudget::default();
        Projector::load(gpu.clone(), (&header, &source), budget, &mut |_, _| {})
            .block_on()
            .unwrap()
    };
    let load_engine = |rel: &str| {
        let source = FileSource::open(data(rel)).unwrap();
        let options = LoadOptions {
            n_ctx: 128,
            batch: Some(64),
            ..Default::default()
        };
        Engine::load(gpu.clone(), &source, &options, &mut |_, _| {})
            .block_on()
            .unwrap()
    };
    let g = qwen_golden();
    let mut qwen = load_engine(g["text_model"].as_str().unwrap());
    let gemma4 = load_projector("tests/data/random-gemma4-mmproj.gguf");
    assert_eq!(gemma4.width(), qwen.injected_width().unwrap());
    let err = qwen.attach_projector(gemma4).unwrap_err().to_string();
    assert!(
        err.contains("rotate as text") && err.contains("multimodal RoPE"),
        "{err}"
    );
    let mut gemma = load_engine("tests/data/random-gemma4-f32.gguf");
    let err = (gemma.attach_projector(projector(gpu.clone())))
        .unwrap_err()
        .to_string();
    assert!(err.contains("by its place in the image's grid"), "{err}");
}

/// Files the projector cannot run are refused by name: deepstack layers (Qwen3-VL's, found by their
/// tensors as llama.cpp finds them), squares of other than 2 x 2 patches, a position table that is
/// not a square.
#[test]
fn qwen3vl_files_it_cannot_run_are_refused() {
    use common::edit_gguf::{set, variant};
    use wick::gguf::{MemorySource, Value as Meta};
    let Some(gpu) = gpu() else { return };
    let file = data(qwen_golden()["mmproj"].as_str().unwrap());
    let load = |source: MemorySource| {
        let header = read_header(&source).block_on().unwrap();
        let budget = TokenBudget::default();
        Projector::load(gpu.clone(), (&header, &source), budget, &mut |_, _| {})
            .block_on()
            .err()
            .expect("refused")
            .to_string()
    };
    let deep = variant(&file, |_, tensors| {
        let (mut spec, bytes) = tensors
            .iter()
            .find(|(s, _)| s.name == "v.post_ln.weight")
            .cloned()
            .unwrap();
        spec.name = "v.deepstack.1.norm.weight".into();
        tensors.push((spec, bytes));
    });
    let err = load(deep);
    assert!(err.contains("deepstack"), "{err}");
    let merge3 = variant(&file, |metadata, _| {
        set(metadata, "clip.vision.spatial_merge_size", Meta::U32(3))
    });
    let err = load(merge3);
    assert!(err.contains("qwen3vl takes 2 x 2"), "{err}");
    let oblong = variant(&file, |_, tensors| {
        let (spec, bytes) = tensors
            .iter_mut()
            .find(|(s, _)| s.name == "v.position_embd.weight")
            .unwrap();
        let row = bytes.len() / spec.dims[1] as usize;
        spec.dims[1] -= 1;
        bytes.truncate(bytes.len() - row);
    });
    let err = load(oblong);
    assert!(err.contains("not [64, a square]"), "{err}");
}

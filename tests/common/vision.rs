//! What the vision tests share: their files, images decoded as the CLI decodes them, and the
//! goldens' image tokens compared row by row.

use pollster::FutureExt as _;
use serde_json::Value;
use std::path::{Path, PathBuf};
use wick::vision::{Image, Projector};

/// A file of the repository.
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The golden JSON at `rel`.
pub fn golden(rel: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(data(rel)).unwrap()).unwrap()
}

/// The image file at `rel`, decoded to RGB.
pub fn picture(rel: &str) -> Image {
    let decoded = image::open(data(rel)).unwrap().to_rgb8();
    Image::new(decoded.width(), decoded.height(), decoded.into_raw()).unwrap()
}

pub fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(&x, &y)| x as f64 * y).sum();
    let na: f64 = a.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// A JSON array of rows of numbers.
pub fn rows(v: &Value) -> Vec<Vec<f64>> {
    (v.as_array().unwrap().iter())
        .map(|r| {
            (r.as_array().unwrap().iter())
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect()
}

pub fn argmax(v: &[f32]) -> u32 {
    (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap() as u32
}

/// A golden case's image through `projector`: its token count, then its rows against the case's
/// `llama_cpp` and `f64` rows, each row's cosine at least the least given for that reference.
pub fn check_tokens(projector: &Projector, case: &Value, least: [(&str, f64); 2]) {
    let width = projector.width() as usize;
    let image = picture(case["image"].as_str().unwrap());
    let n = case["n_tokens"].as_u64().unwrap() as usize;
    assert_eq!(projector.token_grid(&image).unwrap().tokens() as usize, n);
    let tokens = projector.encode(&image).block_on().unwrap();
    assert_eq!(tokens.len(), n * width);
    for (reference, least) in least {
        let want = rows(&case[reference]);
        assert_eq!(want.len(), n);
        let worst = (tokens.chunks(width).zip(&want))
            .map(|(got, want)| cosine(got, want))
            .fold(1.0f64, f64::min);
        println!(
            "{} ({n} tokens): {reference}: least cosine {worst:.7}",
            case["image"]
        );
        assert!(worst >= least, "{reference}: a token's cosine is {worst}");
    }
}

/// The golden's prompt ids with the ids of injected rows (from `n_vocab` on, in order) in place of
/// its -1s.
pub fn prompt_with_rows(golden: &Value, n_vocab: u32) -> Vec<u32> {
    let mut next_row = n_vocab;
    (golden["prompt_ids"].as_array().unwrap().iter())
        .map(|v| match v.as_i64().unwrap() {
            -1 => {
                next_row += 1;
                next_row - 1
            }
            id => id as u32,
        })
        .collect()
}

/// `engine` reading `prompt` (an image's rows injected) as llama.cpp did in `golden`: the logits
/// after it within `tolerance` of its `first_logits`, and its `greedy` reply, teacher-forced on
/// llama.cpp's tokens, the same wherever the top two are more than twice the tolerance apart.
/// `label` names the run in messages.
pub fn check_image_prompt(
    engine: &mut wick::engine::Engine,
    prompt: &[u32],
    golden: &Value,
    tolerance: f32,
    label: &str,
) {
    let want: Vec<f32> = (golden["first_logits"].as_array().unwrap().iter())
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    let logits = engine.prefill(prompt).block_on().unwrap();
    let worst = (logits.iter().zip(&want))
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    println!("{label}: max |Wick - llama.cpp| {worst:.5}");
    assert!(
        worst < tolerance,
        "{label}: a logit is {worst} from llama.cpp's"
    );
    let mut token = argmax(&logits);
    for (i, step) in golden["greedy"].as_array().unwrap().iter().enumerate() {
        let (id, gap) = (
            step["id"].as_u64().unwrap() as u32,
            step["gap"].as_f64().unwrap(),
        );
        if gap > 2.0 * tolerance as f64 {
            assert_eq!(token, id, "{label}: reply token {i}");
        }
        let logits = engine.step(id, true).block_on().unwrap().unwrap();
        token = argmax(&logits);
    }
}

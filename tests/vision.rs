//! Gemma 3's vision projector against llama.cpp's libmtmd and an f64 numpy reference
//! (tests/goldens/make_random_gemma3_vision.py): a random-weight mmproj file in llama.cpp's layout, a
//! 100 x 75 PNG that preprocessing scales and pads, the image's 16 tokens compared row by row. Then
//! what a user gets wrong: a text model given as the projector, a projector type Wick does not run,
//! pixels that do not match the image's size.

mod common;

use common::edit_gguf::{set, variant};
use common::gpu;
use pollster::FutureExt as _;
use serde_json::Value;
use std::path::{Path, PathBuf};
use wick::gguf::Value as Meta;
use wick::gguf::{read_header, FileSource, MemorySource};
use wick::vision::{Image, Projector};

/// Least cosine allowed between a token's row and either reference's.
const MIN_COSINE: f64 = 0.9999;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn golden() -> Value {
    let text = std::fs::read_to_string(data("tests/goldens/random-gemma3-vision.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The PNG as RGB pixels.
fn picture(rel: &str) -> Image {
    let decoded = image::open(data(rel)).unwrap().to_rgb8();
    Image::new(decoded.width(), decoded.height(), decoded.into_raw()).unwrap()
}

fn load(
    gpu: std::sync::Arc<wick::gpu::Gpu>,
    source: MemorySource,
) -> Result<Projector, wick::Error> {
    let header = read_header(&source).block_on()?;
    Projector::load(gpu, &header, &source, &mut |_, _| {}).block_on()
}

fn in_memory(rel: &str) -> MemorySource {
    MemorySource {
        bytes: std::fs::read(data(rel)).unwrap(),
        name: rel.into(),
    }
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(&x, &y)| x as f64 * y).sum();
    let na: f64 = a.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
fn gemma3_image_tokens_match_llama_cpp_and_f64() {
    let Some(gpu) = gpu() else { return };
    let g = golden();
    let projector = load(gpu, in_memory(g["mmproj"].as_str().unwrap())).unwrap();
    let image = picture(g["image"].as_str().unwrap());
    let tokens = projector.encode(&image).block_on().unwrap();
    let width = projector.width() as usize;
    assert_eq!(projector.tokens_per_image(), 16);
    assert_eq!(tokens.len(), 16 * width);
    for reference in ["llama_cpp", "f64"] {
        let rows = g[reference].as_array().unwrap();
        assert_eq!(rows.len(), 16);
        let mut worst = 1.0f64;
        for (got, want) in tokens.chunks(width).zip(rows) {
            let want: Vec<f64> = want
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            worst = worst.min(cosine(got, &want));
        }
        println!("{reference}: least cosine {worst:.7}");
        assert!(
            worst >= MIN_COSINE,
            "{reference}: a token's cosine is {worst}"
        );
    }
}

#[test]
fn a_text_model_or_another_projector_is_refused_by_name() {
    let Some(gpu) = gpu() else { return };
    let g = golden();
    let text = in_memory(g["text_model"].as_str().unwrap());
    let err = load(gpu.clone(), text)
        .err()
        .expect("a text model is no projector")
        .to_string();
    assert!(err.contains("mmproj") && err.contains("gemma3"), "{err}");

    let other = variant(&data(g["mmproj"].as_str().unwrap()), |metadata, _| {
        set(
            metadata,
            "clip.projector_type",
            Meta::String("qwen3vl".into()),
        )
    });
    let err = load(gpu, other)
        .err()
        .expect("an unknown projector")
        .to_string();
    assert!(
        err.contains("\"qwen3vl\"") && err.contains("Wick runs: gemma3"),
        "{err}"
    );
}

#[test]
fn pixels_that_do_not_fill_the_image_are_refused() {
    let err = Image::new(4, 3, vec![0; 35]).unwrap_err().to_string();
    assert!(err.contains("36 bytes"), "{err}");
    assert!(Image::new(0, 3, vec![]).is_err());
}

#[test]
fn the_file_source_reads_the_projector_too() {
    // The projector loads from a file as a model does, by range reads.
    let Some(gpu) = gpu() else { return };
    let g = golden();
    let source = FileSource::open(data(g["mmproj"].as_str().unwrap())).unwrap();
    let header = read_header(&source).block_on().unwrap();
    let mut last = (0, 0);
    let projector = Projector::load(gpu, &header, &source, &mut |done, total| {
        last = (done, total)
    })
    .block_on()
    .unwrap();
    assert_eq!(projector.width(), 128);
    assert!(
        last.0 == last.1 && last.1 > 0,
        "progress ends at the whole file: {last:?}"
    );
}

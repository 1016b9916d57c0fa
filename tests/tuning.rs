//! Kernel-shape tuning: what `Engine::tune` keeps is one of the candidates, and numbers do not change.

mod common;

use common::gpu;
use pollster::FutureExt as _;
use wick::engine::{Engine, LoadOptions, TuneShapes};
use wick::gguf::FileSource;

/// `Engine::tune` times every candidate of each matvec shape with no winner yet and keeps one of
/// them, once per shape; the tuned engine, and a model loaded afterwards on the same GPU, give the
/// same logits as the defaults, up to summation order.
#[test]
fn tuning_keeps_the_numbers() {
    let Some(gpu) = gpu() else { return };
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/random-llama-chat.gguf");
    let source = FileSource::open(path).unwrap();
    let options = LoadOptions {
        n_ctx: 32,
        batch: 1,
        ..Default::default()
    };
    let load = |gpu: &std::sync::Arc<wick::gpu::Gpu>| {
        Engine::load(gpu.clone(), &source, &options, &mut |_, _| {})
            .block_on()
            .unwrap()
    };
    let prompt = [1u32, 50, 300, 7, 99];
    let mut engine = load(&gpu);
    let want = engine.prefill(&prompt).block_on().unwrap();
    let untuned = engine.untuned_shapes();
    let (tuning, report) = engine.tune(TuneShapes::New).block_on().unwrap();
    assert_eq!(report.iter().map(|t| t.shape).collect::<Vec<_>>(), untuned);
    assert!(untuned.len() >= 4, "{untuned:?}"); // q/k/v, output, gate/up, down, head
    for t in &report {
        assert!(
            t.shape.candidates(gpu.subgroup_size).contains(&t.after.0),
            "{t:?}"
        );
        assert!(t.after.1 <= t.before.1, "{t:?}");
        assert_eq!(tuning.matvec.get(&t.shape.key()), Some(&t.after.0));
    }
    // Once per shape: nothing is left to time, unless every shape is asked for.
    assert!(engine.untuned_shapes().is_empty());
    let (_, again) = engine.tune(TuneShapes::New).block_on().unwrap();
    assert!(again.is_empty());
    let (_, all) = engine.tune(TuneShapes::All).block_on().unwrap();
    assert_eq!(all.len(), report.len());
    gpu.set_tuning(tuning);
    let mut tuned = load(&gpu);
    let got = tuned.prefill(&prompt).block_on().unwrap();
    let diff = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(diff < 1e-3, "tuned logits differ by {diff}");
}

//! Tiny random-weight deepseek2 models (tests/data/random-deepseek2-*.gguf, made with their goldens by
//! tests/goldens/make_random_deepseek2.py): Multi-head Latent Attention with q_lora 0 and > 0, the split
//! attn_k_b/attn_v_b layout and the older attn_kv_b, YaRN, mixture-of-experts with softmax gating and with
//! sigmoid gating + selection bias + normalized, scaled weights, shared experts, dense leading layers,
//! and Q8_0 and mixed K-quant files. Wick (absorbed MLA, experts read by index) against an f32 numpy
//! reference in the naive, decompressed form and against llama.cpp, teacher-forced on all 512 logits.

use crate::common;

use common::fidelity::Tolerance;
use common::gpu;
use common::random_model::{check_all, check_all_loaded};

/// Largest |Wick - f32 reference| on any logit (logits have a std of about 4).
const TOL_F32: f32 = 0.005;
/// The same where the cache rounds each value to f16.
const TOL_F16_CACHE: f32 = 0.05;
/// llama.cpp here is up to 0.63 from exact math (its 8-bit activations on the Q4_K_M file; 0.04 on the
/// f16 files).
const LLAMA_CPP: Tolerance = Tolerance {
    logit: 0.8,
    clear_gap: 0.8,
};

#[test]
fn random_deepseek2_models_match_references() {
    let Some(gpu) = gpu() else { return };
    let golden = serde_json::from_str(include_str!("goldens/random-deepseek2.json")).unwrap();
    let reports = check_all(&gpu, &golden, TOL_F32, LLAMA_CPP);
    assert_eq!(reports.len(), 5);
}

/// The same with each RMSNorm done in the kernel of the product that reads it (`Gpu::fuses_norms`, a
/// GPU's default, which lavapipe does not take): the layer's input norm in the query's and the
/// compressed kv's products, q_lora's norm in q_b's, the feed-forward's in its products. A decode
/// step of one sequence, and steps of several.
#[test]
fn random_deepseek2_with_norms_fused_match_references() {
    let Some(gpu) = common::gpu_with_norms_fused() else {
        return;
    };
    let golden = serde_json::from_str(include_str!("goldens/random-deepseek2.json")).unwrap();
    let reports = check_all(&gpu, &golden, TOL_F32, LLAMA_CPP);
    assert_eq!(reports.len(), 5);
    common::random_model::check_parallel(&gpu, &golden, TOL_F32);
}

/// With the latent cache in f16 (`KvType::F16`, a GPU's default): the same checks against
/// llama.cpp, and against the f32 reference within f16's rounding of every cached latent and rope
/// value.
#[test]
fn random_deepseek2_with_an_f16_cache_match_references() {
    let Some(gpu) = gpu() else { return };
    let golden = serde_json::from_str(include_str!("goldens/random-deepseek2.json")).unwrap();
    let options = wick::engine::LoadOptions {
        kv_cache: Some(wick::gpu::KvType::F16),
        ..common::options(64)
    };
    let reports = check_all_loaded(&gpu, &golden, (TOL_F16_CACHE, LLAMA_CPP), options);
    assert_eq!(reports.len(), 5);
}

/// A prompt read in chunks (the prefill plan: MLA's projections and attention and the experts over
/// several tokens at once, the experts grouped by the tokens routed to them) leaves the cache one token
/// at a time leaves: the logits after it are the f32 reference's and the one-token path's, and the
/// greedy tokens that follow are the one-token path's. Chunks of 5 tokens cross the chunk boundary
/// several times and end on a partial chunk. The scoring plan's log-probabilities at every position
/// are the f32 reference's.
#[test]
fn chunked_prompts_equal_one_token_at_a_time() {
    use pollster::FutureExt as _;
    use wick::engine::{Engine, LoadOptions};
    use wick::gguf::FileSource;
    let Some(gpu) = gpu() else { return };
    let golden: serde_json::Value =
        serde_json::from_str(include_str!("goldens/random-deepseek2.json")).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let load = |file: &str, batch: u32, scoring: bool| {
        let options = LoadOptions {
            n_ctx: 64,
            batch: Some(batch),
            scoring,
            ..Default::default()
        };
        let source = FileSource::open(root.join(file)).unwrap();
        Engine::load(gpu.clone(), &source, &options, &mut |_, _| {})
            .block_on()
            .unwrap()
    };
    let greedy = |engine: &mut Engine, first: u32| {
        let mut tokens = vec![first];
        for _ in 0..8 {
            let last = *tokens.last().unwrap();
            tokens.push(engine.step_greedy(last).block_on().unwrap());
        }
        tokens
    };
    for record in golden["records"].as_array().unwrap() {
        let file = record["file"].as_str().unwrap();
        let ids = common::fidelity::ids(&record["teacher_ids"]);
        let f32_logits: Vec<Vec<f32>> =
            serde_json::from_value(record["f32_logits"].clone()).unwrap();
        let last = ids.len() - 1;

        let mut one = load(file, 1, false);
        let want = one.prefill(&ids).block_on().unwrap();
        let mut chunked = load(file, 5, false);
        let got = chunked.prefill(&ids).block_on().unwrap();
        let off = |a: &[f32], b: &[f32]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0f32, f32::max)
        };
        let (e_one, e_f32) = (off(&got, &want), off(&got, &f32_logits[last]));
        eprintln!("{file}: chunked logits off the one-token path's by {e_one:.2e}, the f32 reference's by {e_f32:.2e}");
        assert!(e_one < 1e-3 && e_f32 < TOL_F32, "{file}: chunked logits");
        let first = wick::sampler::argmax(&want);
        assert_eq!(
            greedy(&mut chunked, first),
            greedy(&mut one, first),
            "{file}: greedy"
        );

        let mut scoring = load(file, 7, true);
        let log_probs = scoring
            .log_probs(&ids[..last], ids[last])
            .block_on()
            .unwrap();
        for (pos, lp) in log_probs.iter().enumerate() {
            let want = wick::ops::log_prob::reference(&f32_logits[pos], ids[pos + 1] as usize);
            assert!(
                (lp - want).abs() < 0.01,
                "{file} position {pos}: log-probability {lp}, the f32 reference's {want}"
            );
        }
    }
}

/// Several sequences in one decode step: MLA's cache and the experts over tokens of different
/// sequences (`check_parallel`); then again with each step's attention split over its keys from
/// position 8 on, steps of several tokens too (a GPU's way deep into a context).
#[test]
fn random_deepseek2_in_parallel_sequences() {
    let Some(gpu) = gpu() else { return };
    let golden = serde_json::from_str(include_str!("goldens/random-deepseek2.json")).unwrap();
    common::random_model::check_parallel(&gpu, &golden, TOL_F32);
    gpu.set_split_attention_from(8);
    gpu.set_splits_steps(true);
    common::random_model::check_parallel(&gpu, &golden, TOL_F32);
}

/// Deep into a context (from position 1024 on) a decode step splits MLA's attention over the keys
/// and merges the splits: a step there gives the logits that reading the same token as the last of a
/// prompt's chunk gives (attention over the chunk, not split), within summation order. A speculative
/// check of three tokens there splits each token's keys the same way (where the adapter splits
/// steps of several tokens: a GPU's default, set here) and gives each the logits of its step. Over
/// an f32 cache and an f16 one (a GPU's default). The file is rewritten with a longer trained
/// context (its own is 256), the weights as they are.
#[test]
fn a_deep_step_splits_mla_and_equals_the_prompts_path() {
    use pollster::FutureExt as _;
    use wick::engine::{Engine, LoadOptions};
    use wick::gguf::{read_header, write::Writer, FileSource, MemorySource, Value};
    use wick::gpu::KvType;
    let Some(gpu) = gpu() else { return };
    gpu.set_splits_steps(true);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/random-deepseek2-moe-sigmoid-q8_0.gguf");
    let bytes = std::fs::read(&path).unwrap();
    let header = read_header(&FileSource::open(&path).unwrap())
        .block_on()
        .unwrap();
    let mut metadata = header.metadata.clone();
    let (_, context) = (metadata.iter_mut())
        .find(|(k, _)| k == "deepseek2.context_length")
        .unwrap();
    *context = Value::U32(2048);
    let tensors: Vec<_> = (header.tensors.iter())
        .map(|t| wick::gguf::write::TensorSpec {
            name: t.name.clone(),
            dims: t.dims.clone(),
            ty: t.ty,
        })
        .collect();
    let mut writer = Writer::new(Vec::new(), &metadata, &tensors).unwrap();
    for t in &header.tensors {
        writer
            .write_data(&bytes[header.tensor_range(t).start as usize..][..t.bytes() as usize])
            .unwrap();
    }
    let source = MemorySource {
        bytes: writer.finish().unwrap(),
        name: "deepseek2 with a 2048-token context".into(),
    };
    for kv_cache in [KvType::F32, KvType::F16] {
        let load = || {
            let options = LoadOptions {
                n_ctx: 1100,
                batch: Some(64),
                check_tokens: 3,
                kv_cache: Some(kv_cache),
                ..Default::default()
            };
            Engine::load(gpu.clone(), &source, &options, &mut |_, _| {})
                .block_on()
                .unwrap()
        };
        deep_step_against_the_prompts_path(load, kv_cache);
    }
}

fn deep_step_against_the_prompts_path(
    load: impl Fn() -> wick::engine::Engine,
    kv_cache: wick::gpu::KvType,
) {
    use pollster::FutureExt as _;
    let prompt: Vec<u32> = (0..1030u32).map(|i| i * 37 % 200 + 1).collect();
    let next = 77u32;
    let mut stepped = load();
    stepped.prefill(&prompt).block_on().unwrap();
    let got = stepped.step(next, true).block_on().unwrap().unwrap();
    let mut read = load();
    let whole: Vec<u32> = prompt.iter().copied().chain([next]).collect();
    let want = read.prefill(&whole).block_on().unwrap();
    let diff = (got.iter().zip(&want))
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    eprintln!(
        "{kv_cache:?} cache, a step at 1030 against the prompt's path: logits differ by {diff:.2e}"
    );
    assert!(diff < 1e-3, "logits differ by {diff}");

    let (diff, [deep, at_start]) = common::check_against_steps(load, &prompt, &[next, 5, 9]);
    eprintln!("{kv_cache:?} cache, a check at 1030 against its steps: logits differ by {diff:.2e}; {deep} dispatches, {at_start} at position 0");
    assert!(
        diff < 1e-3,
        "a check's logits differ from its steps' by {diff}"
    );
    assert!(
        deep > at_start,
        "a check deep into the context did not split its attention"
    );
}

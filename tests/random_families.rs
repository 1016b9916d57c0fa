//! Tiny random-weight files in the exact GGUF layouts of qwen3, gemma2, phi3 and Llama 3
//! (tests/data/random-{qwen3,gemma2,phi3,llama3}.gguf, made by tests/goldens/make_random_families.py,
//! whose docstring says what each exercises; goldens in tests/goldens/random-families.json): 24 tokens
//! fed teacher-forced with all 512 logits at every position compared with an f32 numpy reference
//! (tests/goldens/numpy_dense.py) and with llama.cpp, then llama.cpp's greedy continuation replayed by
//! the near-tie method, and each file's tokenizer against llama.cpp's (tests/common/random_model.rs).

use crate::common;

use common::fidelity::Tolerance;
use common::gpu;
use common::random_model::{check_all, check_all_loaded};
use wick::gpu::KvType;

/// Largest |Wick - f32 reference| allowed on any logit (logits span about -15..15); the reference is
/// rounded to 4 decimals.
const TOL_F32: f32 = 0.005;
/// With keys and values rounded to f16 in the cache (a relative 2^-11 each).
const TOL_F16_CACHE: f32 = 0.05;
/// llama.cpp's CPU path rounds activations to f16 before its F16 matrix products, which puts its logits
/// up to 0.036 from the f32 reference's on these files.
const LLAMA_CPP: Tolerance = Tolerance {
    logit: 0.1,
    clear_gap: 0.1,
};

#[test]
fn random_qwen3_gemma2_phi3_llama3_match_references() {
    let Some(gpu) = gpu() else { return };
    let golden = serde_json::from_str(include_str!("goldens/random-families.json")).unwrap();
    let reports = check_all(&gpu, &golden, TOL_F32, LLAMA_CPP);
    assert_eq!(reports.len(), 4);
}

#[test]
fn random_families_in_parallel_sequences_match_the_f32_reference() {
    let Some(gpu) = gpu() else { return };
    let golden = serde_json::from_str(include_str!("goldens/random-families.json")).unwrap();
    common::random_model::check_parallel(&gpu, &golden, TOL_F32);
}

/// The same with each step's attention split over its keys from position 8 on, steps of several
/// tokens too (a GPU's way deep into a context): the parallel steps' plans of four and eight rows
/// and the plan of all twelve of the sequences' checks run their split forms past position 8.
#[test]
fn random_families_in_parallel_sequences_split_from_position_8_match_the_f32_reference() {
    let Some(gpu) = gpu() else { return };
    gpu.set_split_attention_from(8);
    gpu.set_splits_steps(true);
    let golden = serde_json::from_str(include_str!("goldens/random-families.json")).unwrap();
    common::random_model::check_parallel(&gpu, &golden, TOL_F32);
}

/// Both checks with each RMSNorm done in the kernel of the product that reads it where the model
/// allows (`Gpu::fuses_norms`, a GPU's default, which lavapipe does not take): qwen3's q/k/v (stacked
/// before its head norms) and feed-forward inputs, phi3's feed-forward input, Llama 3's q/k/v and
/// feed-forward inputs; gemma2's post-norms stay as they are. A decode step of one sequence, and steps of several, four to a workgroup.
#[test]
fn random_families_with_norms_fused_match_references() {
    let Some(gpu) = common::gpu_with_norms_fused() else {
        return;
    };
    let golden = serde_json::from_str(include_str!("goldens/random-families.json")).unwrap();
    let reports = check_all(&gpu, &golden, TOL_F32, LLAMA_CPP);
    assert_eq!(reports.len(), 4);
    common::random_model::check_parallel(&gpu, &golden, TOL_F32);
}

/// With the KV cache in f16 (`KvType::F16`, as llama.cpp's CPU path keeps it): the same checks
/// against llama.cpp, and against the f32 reference within f16's rounding of every key and value.
#[test]
fn random_families_with_an_f16_cache_match_references() {
    let Some(gpu) = gpu() else { return };
    let golden = serde_json::from_str(include_str!("goldens/random-families.json")).unwrap();
    let options = wick::engine::LoadOptions {
        kv_cache: Some(KvType::F16),
        ..common::options(64)
    };
    let reports = check_all_loaded(&gpu, &golden, (TOL_F16_CACHE, LLAMA_CPP), options);
    assert_eq!(reports.len(), 4);
}

//! Tiny random-weight deepseek2 models (tests/data/random-deepseek2-*.gguf, made with their goldens by
//! tests/goldens/make_random_deepseek2.py): Multi-head Latent Attention with q_lora 0 and > 0, the split
//! attn_k_b/attn_v_b layout and the older attn_kv_b, YaRN, mixture-of-experts with softmax gating and with
//! sigmoid gating + selection bias + normalized, scaled weights, shared experts, dense leading layers,
//! and Q8_0 and mixed K-quant files. Wick (absorbed MLA, experts read by index) against an f32 numpy
//! reference in the naive, decompressed form and against llama.cpp, teacher-forced on all 512 logits.

mod common;

use common::fidelity::Tolerance;
use common::gpu;
use common::random_model::check_all;

/// Largest |Wick - f32 reference| on any logit (logits have a std of about 4).
const TOL_F32: f32 = 0.005;
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

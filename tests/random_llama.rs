//! A tiny random-weight llama (tests/data/random-llama-*.gguf: width 256, GQA 4/2, n_ff 768, 2 layers,
//! vocab 512) whose every matrix is a multiple of 256 wide, so llama.cpp's quantizer keeps the K types:
//! across the three files every matrix role (token_embd, attn_q/k/v/output, ffn_gate/up/down, output) is
//! Q4_K, Q5_K and Q6_K, and the _M files mix two types in one model. Made by
//! tests/goldens/make_random_llama.py, goldens in tests/goldens/random-llama.json.
//!
//! For each file, 24 tokens are fed teacher-forced and the full 512 logits at every position compared
//! with two references:
//! - an f32 numpy forward pass over the `gguf` package's dequantized weights: the same math as Wick's
//!   kernels, so the tolerance is tight ([TOL_F32]);
//! - llama.cpp (CPU). Its K-quant dot products round the activations to 8 bits (Q8_K), which on this
//!   model puts its logits up to 0.65 (mean 0.09) from the exact f32 ones, at a logit std of about 4;
//!   the tolerance is [LLAMA_CPP].
//!
//! Then llama.cpp's greedy continuation is replayed: its top logits must be matched within
//! [LLAMA_CPP], and the same token chosen wherever llama.cpp's top-1/top-2 gap exceeds it (a
//! smaller gap is a near tie, counted but allowed). The file's size, tensor types and tokenizer (against
//! llama.cpp's tokenization of a short text) are checked too (tests/common/random_model.rs).

use crate::common;

use common::fidelity::Tolerance;
use common::gpu;
use common::random_model::check_all;
use std::collections::BTreeMap;

/// Largest |Wick - f32 reference| allowed on any logit (logits span about -18..16). Measured on
/// lavapipe: 0.00006, the reference's rounding to 4 decimals; the margin is for other adapters' float
/// math (fused multiply-adds, reduction order).
const TOL_F32: f32 = 0.005;
/// llama.cpp's own distance from exact math here is 0.65 / 0.58 / 0.61 at most (Q4_K_M / Q5_K_M / Q6_K
/// files), and Wick's distance from llama.cpp measures the same.
const LLAMA_CPP: Tolerance = Tolerance {
    logit: 0.8,
    clear_gap: 0.8,
};

#[test]
fn random_llama_k_quants_match_references() {
    let Some(gpu) = gpu() else { return };
    let golden = serde_json::from_str(include_str!("goldens/random-llama.json")).unwrap();
    let reports = check_all(&gpu, &golden, TOL_F32, LLAMA_CPP);
    // Every matrix role carries each K type in some file (the test's reason to exist).
    let mut roles: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in &reports {
        for (t, ty) in &r.types {
            if t.ends_with(".weight") && !t.contains("norm") {
                let role = t.trim_end_matches(".weight").rsplit('.').next().unwrap();
                roles.entry(role.to_string()).or_default().push(ty.clone());
            }
        }
    }
    for (role, types) in &roles {
        for k in ["Q4_K", "Q5_K", "Q6_K"] {
            assert!(
                types.iter().any(|t| t == k),
                "{role} is never {k}: {types:?}"
            );
        }
    }
    assert_eq!(roles.len(), 9, "matrix roles: {:?}", roles.keys());
}

/// The same with each RMSNorm done in the kernel of the q/k/v projection and of gate and up
/// (`Gpu::fuses_norms`, a GPU's default, which lavapipe does not take), in every K type.
#[test]
fn random_llama_with_norms_fused_matches_references() {
    let Some(gpu) = common::gpu_with_norms_fused() else {
        return;
    };
    let golden = serde_json::from_str(include_str!("goldens/random-llama.json")).unwrap();
    check_all(&gpu, &golden, TOL_F32, LLAMA_CPP);
}

//! The log-probability of each token's successor under its row of logits (shaders/token_log_prob.wgsl):
//! a perplexity reads back one number per token instead of a row of n_vocab.

use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n_vocab: u32,
}

/// Adds `out[t] = log softmax(logits[t])[next token of t]` to the plan for each token row; the run's
/// step input holds the token after its last (`StepInput::write_followed`). logits: (batch, n_vocab)
/// f32; out: (batch) f32.
pub fn push(plan: &mut Plan, logits: &wgpu::Buffer, out: &wgpu::Buffer, n_vocab: u32) {
    let key = PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(Kernel::TokenLogProb, None)
    };
    let step = plan.step.clone();
    plan.push(
        key,
        &[logits, &step, out],
        super::params(&Params { n_vocab }),
        Groups::per_token(1),
    );
}

/// log softmax(logits)[i], in f64 (llama-perplexity sums the exponentials in double).
pub fn reference(logits: &[f32], i: usize) -> f64 {
    let max = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
    logits[i] as f64 - max - sum.ln()
}

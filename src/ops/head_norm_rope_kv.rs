//! After the attention projection of models that RMS-norm q and k per head (Gemma 3, Qwen 3): each
//! head normed and rotated, q into its row and k and v into the cache (shaders/head_norm_rope_kv.wgsl).
//! The projection itself writes q, k and v side by side (matvec::push_stacked), in gated attention
//! (Qwen3.5) with the output gate's values between q and k, which this leaves for sigmoid_gate.

use super::rope::{Rope, RopeParams};
use super::rope_kv::{Heads, RopeBuffers};
use crate::gpu::{Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rope: RopeParams,
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    eps: f32,
    row_len: u32,
    k_at: u32,
    pad: [u32; 2],
}

/// Heads of up to this many dimensions (64 threads, 4 pairs each).
pub const MAX_HEAD_DIM: u32 = 512;

/// Adds the norms, rotations and cache writes for each token of the run. qkv: (batch, row_len), each
/// token's q, then (where `gated`) n_head * head_dim gate values, then k and v; norms: (2, head_dim),
/// q's weights then k's.
pub fn push(
    plan: &mut Plan,
    (qkv, gated): (&wgpu::Buffer, bool),
    norms: &wgpu::Buffer,
    (rope, eps): (&Rope, f32),
    heads: Heads,
    b: &RopeBuffers,
) {
    assert!(heads.head_dim % 2 == 0 && heads.head_dim <= MAX_HEAD_DIM);
    let step = plan.step.clone();
    let q_dim = heads.n_head * heads.head_dim;
    let k_at = q_dim * (1 + gated as u32);
    let p = Params {
        rope: rope.params(),
        n_head: heads.n_head,
        n_kv_head: heads.n_kv_head,
        head_dim: heads.head_dim,
        eps,
        row_len: k_at + 2 * heads.n_kv_head * heads.head_dim,
        k_at,
        pad: [0; 2],
    };
    plan.push(
        PipelineKey::new(Kernel::HeadNormRopeKv, None),
        &[qkv, norms, b.q, b.k_cache, b.v_cache, b.freqs, &step],
        super::params(&p),
        [heads.n_head + 2 * heads.n_kv_head, plan.batch, 1],
    );
}

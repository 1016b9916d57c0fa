//! After the attention projection of models that RMS-norm q and k per head (Gemma 3, Qwen 3): each
//! head normed and rotated, q into its row and k and v into the cache (shaders/head_norm_rope_kv.wgsl).
//! The projection itself writes q, k and v side by side (matvec::push_stacked), in gated attention
//! (Qwen3.5) with the output gate's values between q and k, which this leaves for sigmoid_gate.
//! Gemma 4 also RMS-norms v per head, and its last layers make only q (they read an earlier layer's
//! cache).

use super::rope::{Rope, RopeParams};
use super::rope_kv::{Heads, RopeBuffers};
use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

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
    norm_v: u32,
    pad: u32,
}

/// What the projection made besides q, and so what goes to the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvWrite {
    /// k and v: k normed and rotated, v as it is.
    Kv,
    /// k and v, each normed (v by the third row of the norms).
    KvNormed,
    /// Nothing: only q (a layer that reads another's cache).
    None,
}

/// Heads of up to this many dimensions (64 threads, 4 pairs each).
pub const MAX_HEAD_DIM: u32 = 512;

/// Adds the norms, rotations and cache writes for each token of the run. qkv: (batch, row_len), each
/// token's q, then (where `gated`) n_head * head_dim gate values, then k and v unless `kv` is
/// `KvWrite::None`; norms: (2, head_dim), q's weights then k's, and v's after them with
/// `KvWrite::KvNormed`.
pub fn push(
    plan: &mut Plan,
    (qkv, gated, kv): (&wgpu::Buffer, bool, KvWrite),
    norms: &wgpu::Buffer,
    (rope, eps): (&Rope, f32),
    heads: Heads,
    b: &RopeBuffers,
) {
    assert!(heads.head_dim.is_multiple_of(2) && heads.head_dim <= MAX_HEAD_DIM);
    let step = plan.step.clone();
    let q_dim = heads.n_head * heads.head_dim;
    let k_at = q_dim * (1 + gated as u32);
    let kv_heads = match kv {
        KvWrite::None => 0,
        KvWrite::Kv | KvWrite::KvNormed => 2 * heads.n_kv_head,
    };
    let p = Params {
        rope: rope.params(),
        n_head: heads.n_head,
        n_kv_head: heads.n_kv_head,
        head_dim: heads.head_dim,
        eps,
        row_len: k_at + kv_heads * heads.head_dim,
        k_at,
        norm_v: (kv == KvWrite::KvNormed) as u32,
        pad: 0,
    };
    plan.push(
        PipelineKey::new(Kernel::HeadNormRopeKv(b.cache_type), None),
        &[qkv, norms, b.q, b.k_cache, b.v_cache, b.freqs, &step],
        super::params(&p),
        Groups::per_token(heads.n_head + kv_heads),
    );
}

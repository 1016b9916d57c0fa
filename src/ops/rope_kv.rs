//! RoPE on q and k, then k and v into the cache (shaders/rope_kv.wgsl).

use super::rope::{Rope, RopeParams};
use crate::gpu::{Kernel, PipelineKey, Plan};

/// The heads the kernel rotates and caches.
#[derive(Clone, Copy, Debug)]
pub struct Heads {
    pub n_head: u32,
    pub n_kv_head: u32,
    pub head_dim: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rope: RopeParams,
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    has_factors: u32,
}

/// The cache and per-step inputs the kernel works on.
pub struct RopeBuffers<'a> {
    /// (batch, (n_head + 2 n_kv_head) head_dim): each token's q, k and v side by side; q is rotated
    /// in place.
    pub qkv: &'a wgpu::Buffer,
    /// (n_ctx, n_kv_head, head_dim)
    pub k_cache: &'a wgpu::Buffer,
    pub v_cache: &'a wgpu::Buffer,
    /// (n_rot / 2) frequency divisors, when the model has them.
    pub factors: Option<&'a wgpu::Buffer>,
}

pub fn push(plan: &mut Plan, rope: &Rope, heads: Heads, b: &RopeBuffers) {
    let p = Params {
        rope: rope.params(),
        n_head: heads.n_head,
        n_kv_head: heads.n_kv_head,
        head_dim: heads.head_dim,
        has_factors: b.factors.is_some() as u32,
    };
    let threads = (heads.n_head + heads.n_kv_head) * heads.head_dim / 2;
    // With no factors, the step buffer stands in for them: the binding must be there, unread.
    let step = plan.step.clone();
    let factors = b.factors.unwrap_or(&step);
    plan.push(
        PipelineKey::new(Kernel::RopeKv, None),
        &[b.qkv, b.k_cache, b.v_cache, factors, &step],
        super::params(&p),
        [threads.div_ceil(64), plan.batch, 1],
    );
}

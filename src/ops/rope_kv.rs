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
    /// (n_head, head_dim), rotated in place.
    pub q: &'a wgpu::Buffer,
    /// (n_kv_head, head_dim)
    pub k: &'a wgpu::Buffer,
    pub v: &'a wgpu::Buffer,
    /// (n_ctx, n_kv_head, head_dim)
    pub k_cache: &'a wgpu::Buffer,
    pub v_cache: &'a wgpu::Buffer,
    /// (n_rot / 2) frequency divisors, when the model has them.
    pub factors: Option<&'a wgpu::Buffer>,
    /// The step's { token, pos }; also stands in for `factors` when there are none.
    pub step: &'a wgpu::Buffer,
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
    let factors = b.factors.unwrap_or(b.step);
    plan.push(
        PipelineKey::new(Kernel::RopeKv, None),
        &[b.q, b.k, b.v, b.k_cache, b.v_cache, factors, b.step],
        super::params(&p),
        [threads.div_ceil(64), 1, 1],
    );
}

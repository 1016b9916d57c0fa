//! RoPE on q and k, then k and v into the cache (shaders/rope_kv.wgsl).

use crate::gpu::{Kernel, PipelineKey, Plan};

/// How a model rotates its queries and keys.
#[derive(Clone, Copy, Debug)]
pub struct Rope {
    pub n_head: u32,
    pub n_kv_head: u32,
    pub head_dim: u32,
    /// Dimensions rotated, from the first of each head.
    pub n_rot: u32,
    pub freq_base: f32,
    /// 1 / the linear scaling factor.
    pub freq_scale: f32,
    /// NeoX ordering: rotate (i, i + n_rot/2) instead of (2i, 2i+1).
    pub neox: bool,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    n_rot: u32,
    freq_base: f32,
    freq_scale: f32,
    neox: u32,
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

pub fn push(plan: &mut Plan, rope: &Rope, b: &RopeBuffers) {
    let p = Params {
        n_head: rope.n_head,
        n_kv_head: rope.n_kv_head,
        head_dim: rope.head_dim,
        n_rot: rope.n_rot,
        freq_base: rope.freq_base,
        freq_scale: rope.freq_scale,
        neox: rope.neox as u32,
        has_factors: b.factors.is_some() as u32,
    };
    let threads = (rope.n_head + rope.n_kv_head) * rope.head_dim / 2;
    let factors = b.factors.unwrap_or(b.step);
    plan.push(
        PipelineKey::new(Kernel::RopeKv, None),
        &[b.q, b.k, b.v, b.k_cache, b.v_cache, factors, b.step],
        super::params(&p),
        [threads.div_ceil(64), 1, 1],
    );
}

/// CPU reference: rotates one head of `x` in place at position `pos`.
pub fn reference(rope: &Rope, x: &mut [f32], pos: u32, factors: Option<&[f32]>) {
    for i in 0..(rope.n_rot / 2) as usize {
        let (j0, j1) = if rope.neox {
            (i, i + rope.n_rot as usize / 2)
        } else {
            (2 * i, 2 * i + 1)
        };
        let mut theta = rope.freq_scale as f64
            * pos as f64
            * (rope.freq_base as f64).powf(-2.0 * i as f64 / rope.n_rot as f64);
        if let Some(f) = factors {
            theta /= f[i] as f64;
        }
        let (s, c) = (theta.sin() as f32, theta.cos() as f32);
        let (a, b) = (x[j0], x[j1]);
        x[j0] = a * c - b * s;
        x[j1] = a * s + b * c;
    }
}

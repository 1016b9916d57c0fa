//! Grouped-query attention of the step's query over the KV cache (shaders/attention.wgsl).

use crate::gpu::{Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    n_ctx: u32,
    scale: f32,
}

pub struct AttentionBuffers<'a> {
    /// (n_head, head_dim)
    pub q: &'a wgpu::Buffer,
    /// (n_ctx, n_kv_head, head_dim)
    pub k_cache: &'a wgpu::Buffer,
    pub v_cache: &'a wgpu::Buffer,
    /// (n_head, n_ctx) scratch
    pub scores: &'a wgpu::Buffer,
    /// (n_head, head_dim)
    pub out: &'a wgpu::Buffer,
    pub step: &'a wgpu::Buffer,
}

pub fn push(
    plan: &mut Plan,
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    n_ctx: u32,
    b: &AttentionBuffers,
) {
    let p = Params {
        n_head,
        n_kv_head,
        head_dim,
        n_ctx,
        scale: 1.0 / (head_dim as f32).sqrt(),
    };
    plan.push(
        PipelineKey::new(Kernel::Attention, None),
        &[b.q, b.k_cache, b.v_cache, b.scores, b.out, b.step],
        super::params(&p),
        [n_head, 1, 1],
    );
}

/// CPU reference for one query head over `n` cached positions. k, v: (n, head_dim) for its kv head.
pub fn reference(q: &[f32], k: &[f32], v: &[f32], head_dim: usize) -> Vec<f32> {
    let n = k.len() / head_dim;
    let scale = 1.0 / (head_dim as f32).sqrt();
    let scores: Vec<f32> = (0..n)
        .map(|p| {
            q.iter()
                .zip(&k[p * head_dim..])
                .map(|(a, b)| a * b)
                .sum::<f32>()
                * scale
        })
        .collect();
    let max = scores.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = scores.iter().map(|s| (s - max).exp()).collect();
    let sum: f32 = e.iter().sum();
    (0..head_dim)
        .map(|d| (0..n).map(|p| e[p] * v[p * head_dim + d]).sum::<f32>() / sum)
        .collect()
}

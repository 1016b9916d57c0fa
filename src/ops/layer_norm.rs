//! LayerNorm with a bias (shaders/layer_norm.wgsl): of the residual stream itself where BERT norms the
//! sum after each residual add, so the normed rows are both the stream and the next sublayer's input;
//! or into rows of their own before a sublayer (a pre-norm encoder, SigLIP).

use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    eps: f32,
    in_place: u32,
}

/// Adds `x = layernorm(x) * w + b; y = x` to the plan for each token row. x, y: (batch, n) f32; w, b:
/// (n).
pub fn push(
    plan: &mut Plan,
    x: &wgpu::Buffer,
    (w, b): (&wgpu::Buffer, &wgpu::Buffer),
    y: &wgpu::Buffer,
    n: u32,
    eps: f32,
) {
    push_norm(plan, x, (w, b), y, (n, eps), true);
}

/// Adds `y = layernorm(x) * w + b`, x left as it is, for each token row.
pub fn push_apart(
    plan: &mut Plan,
    x: &wgpu::Buffer,
    (w, b): (&wgpu::Buffer, &wgpu::Buffer),
    y: &wgpu::Buffer,
    n: u32,
    eps: f32,
) {
    push_norm(plan, x, (w, b), y, (n, eps), false);
}

fn push_norm(
    plan: &mut Plan,
    x: &wgpu::Buffer,
    (w, b): (&wgpu::Buffer, &wgpu::Buffer),
    y: &wgpu::Buffer,
    (n, eps): (u32, f32),
    in_place: bool,
) {
    let key = PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(Kernel::LayerNorm, None)
    };
    let step = plan.step.clone();
    plan.push(
        key,
        &[x, w, b, y, &step],
        super::params(&Params {
            n,
            eps,
            in_place: in_place as u32,
        }),
        Groups::per_token(1),
    );
}

/// CPU reference for one row.
pub fn reference(x: &[f32], w: &[f32], b: &[f32], eps: f32) -> Vec<f32> {
    let n = x.len() as f64;
    let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    let scale = 1.0 / (var + eps as f64).sqrt();
    x.iter()
        .zip(w.iter().zip(b))
        .map(|(&v, (&w, &b))| ((v as f64 - mean) * scale * w as f64 + b as f64) as f32)
        .collect()
}

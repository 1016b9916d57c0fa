//! Gemma 4's per-layer inputs (shaders/per_layer_inputs.wgsl): each layer's slice of the projected
//! embedding, normed, plus the token's row of the per-layer table.

use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    width: u32,
    n_layer: u32,
    eps: f32,
    proj_scale: f32,
    input_scale: f32,
}

/// The shape of the inputs and the scales around the norm.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub width: u32,
    pub n_layer: u32,
    pub eps: f32,
    /// The projection is scaled by this before its norm (1 / sqrt(n_embd)).
    pub proj_scale: f32,
    /// The sum is scaled by this (1 / sqrt(2)).
    pub input_scale: f32,
}

/// Adds `inputs = (rmsnorm(inputs * proj_scale) * norm + rows) * input_scale` per token and layer, in
/// place. inputs, rows: (batch, n_layer, width); norm: (width).
pub fn push(
    plan: &mut Plan,
    s: Shape,
    inputs: &wgpu::Buffer,
    rows: &wgpu::Buffer,
    norm: &wgpu::Buffer,
) {
    let p = Params {
        width: s.width,
        n_layer: s.n_layer,
        eps: s.eps,
        proj_scale: s.proj_scale,
        input_scale: s.input_scale,
    };
    let step = plan.step.clone();
    plan.push(
        PipelineKey::new(Kernel::PerLayerInputs, None),
        &[inputs, rows, norm, &step],
        super::params(&p),
        Groups::per_token(s.n_layer),
    );
}

/// CPU reference for one token: `proj` and `rows` are (n_layer, width).
pub fn reference(s: Shape, proj: &[f32], rows: &[f32], norm: &[f32]) -> Vec<f32> {
    let w = s.width as usize;
    let mut out = Vec::with_capacity(proj.len());
    for (p, r) in proj.chunks(w).zip(rows.chunks(w)) {
        let scaled: Vec<f32> = p.iter().map(|v| v * s.proj_scale).collect();
        let normed = super::rms_norm::reference(&scaled, norm, s.eps);
        out.extend(normed.iter().zip(r).map(|(n, r)| (n + r) * s.input_scale));
    }
    out
}

//! Sigmoid gates (shaders/sigmoid_gate.wgsl): Qwen3.5's full-attention layers multiply each value of
//! the attention's output by the sigmoid of a gate their q projection computes beside q; its
//! mixture-of-experts layers scale the shared expert by the sigmoid of one gate per token.

use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    row_len: u32,
    at: u32,
    /// 1: a gate per value; 0: one gate for the whole row.
    per_value: u32,
}

/// Adds `x *= sigmoid(g)` for each token row, x: (batch, n), g the n values from index `at` of each
/// row of `gates`: (batch, row_len).
pub fn push(plan: &mut Plan, x: &wgpu::Buffer, n: u32, gates: (&wgpu::Buffer, u32, u32)) {
    push_gates(plan, x, n, gates, 1);
}

/// Adds `x *= sigmoid(g)` for each token row, x: (batch, n), g the one value at index `at` of each
/// row of `gates`: (batch, row_len).
pub fn push_per_row(plan: &mut Plan, x: &wgpu::Buffer, n: u32, gates: (&wgpu::Buffer, u32, u32)) {
    push_gates(plan, x, n, gates, 0);
}

fn push_gates(
    plan: &mut Plan,
    x: &wgpu::Buffer,
    n: u32,
    (gates, row_len, at): (&wgpu::Buffer, u32, u32),
    per_value: u32,
) {
    let key = PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(Kernel::SigmoidGate, None)
    };
    let step = plan.step.clone();
    let p = Params {
        n,
        row_len,
        at,
        per_value,
    };
    plan.push(
        key,
        &[x, gates, &step],
        super::params(&p),
        Groups::per_token(n.div_ceil(256)),
    );
}

pub fn reference(x: &[f32], gates: &[f32]) -> Vec<f32> {
    x.iter()
        .zip(gates)
        .map(|(x, g)| x / (1.0 + (-g).exp()))
        .collect()
}

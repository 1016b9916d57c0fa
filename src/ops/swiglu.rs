//! h = silu(gate) * up (shaders/swiglu.wgsl).

use crate::gpu::{GpuTensor, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
}

/// Adds `h = silu(g) * u` to the plan. g, u, h: (n) f32.
pub fn push(plan: &mut Plan, g: &wgpu::Buffer, u: &wgpu::Buffer, h: &wgpu::Buffer, n: u32) {
    plan.push(
        PipelineKey::new(Kernel::SwiGlu, None),
        &[g, u, h],
        super::params(&Params { n }),
        [n.div_ceil(64), 1, 1],
    );
}

pub fn reference(g: &[f32], u: &[f32]) -> Vec<f32> {
    g.iter()
        .zip(u)
        .map(|(g, u)| g / (1.0 + (-g).exp()) * u)
        .collect()
}

/// A SwiGLU feed-forward block added to the residual: x += down(silu(gate xn) * up xn), through the
/// scratch buffers `gate`, `up` and `hidden` (at least gate_w.rows long).
pub fn push_ffn(
    plan: &mut Plan,
    (gate_w, up_w, down_w): (&GpuTensor, &GpuTensor, &GpuTensor),
    xn: &wgpu::Buffer,
    (gate, up, hidden): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
    x: &wgpu::Buffer,
) {
    super::matvec::push(plan, gate_w, xn, gate, false);
    super::matvec::push(plan, up_w, xn, up, false);
    push(plan, gate, up, hidden, gate_w.rows);
    super::matvec::push(plan, down_w, hidden, x, true);
}

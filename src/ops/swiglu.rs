//! h = silu(gate) * up (shaders/swiglu.wgsl), and the SwiGLU feed-forward block built on it.

use crate::gpu::{GpuTensor, Kernel, PipelineKey, Plan, Stacked};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    g_offset: u32,
    u_offset: u32,
    stride: u32,
}

/// Adds `h = silu(g) * u` to the plan for each token row. g, u, h: (batch, n) f32.
pub fn push(plan: &mut Plan, g: &wgpu::Buffer, u: &wgpu::Buffer, h: &wgpu::Buffer, n: u32) {
    push_rows(plan, (g, 0), (u, 0), n, h, n);
}

/// As `push`, reading g and u from rows of `stride` values, each from its own offset.
fn push_rows(
    plan: &mut Plan,
    (g, g_offset): (&wgpu::Buffer, u32),
    (u, u_offset): (&wgpu::Buffer, u32),
    stride: u32,
    h: &wgpu::Buffer,
    n: u32,
) {
    let step = plan.step.clone();
    let p = Params {
        n,
        g_offset,
        u_offset,
        stride,
    };
    plan.push(
        PipelineKey::new(Kernel::SwiGlu, None),
        &[g, u, h, &step],
        super::params(&p),
        [n.div_ceil(64), plan.batch, 1],
    );
}

pub fn reference(g: &[f32], u: &[f32]) -> Vec<f32> {
    g.iter()
        .zip(u)
        .map(|(g, u)| g / (1.0 + (-g).exp()) * u)
        .collect()
}

/// A SwiGLU feed-forward block added to the residual: x += down(silu(gate xn) * up xn). `gate_up`
/// stacks gate's rows and then up's, written into `gate_up_out` (batch, 2 n_ff); `hidden`
/// (batch, n_ff) is scratch.
pub fn push_ffn(
    plan: &mut Plan,
    (gate_up, down): (&Stacked, &GpuTensor),
    xn: &wgpu::Buffer,
    (gate_up_out, hidden): (&wgpu::Buffer, &wgpu::Buffer),
    x: &wgpu::Buffer,
) {
    let n_ff = gate_up.rows / 2;
    super::matvec::push_stacked(plan, gate_up, xn, gate_up_out);
    push_rows(
        plan,
        (gate_up_out, 0),
        (gate_up_out, n_ff),
        gate_up.rows,
        hidden,
        n_ff,
    );
    super::matvec::push(plan, down, hidden, x, true);
}

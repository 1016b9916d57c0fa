//! h = silu(gate) * up (shaders/swiglu.wgsl).

use crate::gpu::{Kernel, PipelineKey, Plan};

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

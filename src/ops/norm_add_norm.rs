//! The end of a sublayer whose output is normed before the residual add (Gemma 2/3), fused with the
//! norm of the sum that the next sublayer reads (shaders/norm_add_norm.wgsl).

use crate::gpu::{Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    eps: f32,
}

/// Adds `x += rmsnorm(t) * w_post; y = rmsnorm(x) * w_next` for each token row. t, x, y: (batch, n).
pub fn push(
    plan: &mut Plan,
    (t, w_post): (&wgpu::Buffer, &wgpu::Buffer),
    x: &wgpu::Buffer,
    (w_next, y): (&wgpu::Buffer, &wgpu::Buffer),
    n: u32,
    eps: f32,
) {
    let key = PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(Kernel::NormAddNorm, None)
    };
    let step = plan.step.clone();
    plan.push(
        key,
        &[t, w_post, x, w_next, y, &step],
        super::params(&Params { n, eps }),
        [1, plan.batch, 1],
    );
}

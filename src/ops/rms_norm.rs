//! RMSNorm (shaders/rms_norm.wgsl).

use crate::gpu::{Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    eps: f32,
}

/// Adds `y = rmsnorm(x) * w` to the plan. x, w, y: (n) f32.
pub fn push(
    plan: &mut Plan,
    x: &wgpu::Buffer,
    w: &wgpu::Buffer,
    y: &wgpu::Buffer,
    n: u32,
    eps: f32,
) {
    let key = PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(Kernel::RmsNorm, None)
    };
    plan.push(
        key,
        &[x, w, y],
        super::params(&Params { n, eps }),
        [1, 1, 1],
    );
}

pub fn reference(x: &[f32], w: &[f32], eps: f32) -> Vec<f32> {
    let mean = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let scale = 1.0 / (mean + eps).sqrt();
    x.iter().zip(w).map(|(v, w)| v * scale * w).collect()
}

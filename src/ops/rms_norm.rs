//! RMSNorm (shaders/rms_norm.wgsl), and the end of a sublayer whose output is normed before the
//! residual add (Gemma 2/3), fused with the norm of the sum that the next sublayer reads
//! (shaders/norm_add_norm.wgsl).

use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    eps: f32,
}

/// rmsnorm(x) * gain for each token row of x (n values), as products read it
/// (`matvec::Input::RmsNorm`): pushed into `xn`, or done by their kernels on the way in.
#[derive(Clone, Copy)]
pub struct RmsNorm<'a> {
    pub x: &'a wgpu::Buffer,
    pub gain: &'a wgpu::Buffer,
    pub xn: &'a wgpu::Buffer,
    pub n: u32,
    pub eps: f32,
}

impl<'a> RmsNorm<'a> {
    /// Adds the norm into `xn`, and gives `xn`.
    pub fn push(self, plan: &mut Plan) -> &'a wgpu::Buffer {
        push(plan, self.x, self.gain, self.xn, self.n, self.eps);
        self.xn
    }
}

/// Adds `y = rmsnorm(x) * w` to the plan for each token row. x, y: (batch, n) f32; w: (n).
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
    let step = plan.step.clone();
    plan.push(
        key,
        &[x, w, y, &step],
        super::params(&Params { n, eps }),
        Groups::per_token(1),
    );
}

/// Adds `x += rmsnorm(t) * w_post; y = rmsnorm(x) * w_next` for each token row. t, x, y: (batch, n).
pub fn push_add_norm(
    plan: &mut Plan,
    (t, w_post): (&wgpu::Buffer, &wgpu::Buffer),
    x: &wgpu::Buffer,
    (w_next, y): (&wgpu::Buffer, &wgpu::Buffer),
    n: u32,
    eps: f32,
) {
    push_add_scale_norm(plan, (t, w_post), (x, 1.0), (w_next, y), n, eps);
}

/// As `push_add_norm`, the sum then scaled: `x = (x + rmsnorm(t) * w_post) * scale` (Gemma 4 scales
/// each layer's output).
pub fn push_add_scale_norm(
    plan: &mut Plan,
    (t, w_post): (&wgpu::Buffer, &wgpu::Buffer),
    (x, scale): (&wgpu::Buffer, f32),
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
        super::params(&AddNormParams { n, eps, scale }),
        Groups::per_token(1),
    );
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct AddNormParams {
    n: u32,
    eps: f32,
    scale: f32,
}

pub fn reference(x: &[f32], w: &[f32], eps: f32) -> Vec<f32> {
    let mean = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let scale = 1.0 / (mean + eps).sqrt();
    x.iter().zip(w).map(|(v, w)| v * scale * w).collect()
}

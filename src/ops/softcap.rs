//! Soft-capping, cap * tanh(x / cap), of rows of values in place (shaders/softcap.wgsl): Gemma 2's final
//! logits. (Its attention scores are capped inside attention.)

use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    cap: f32,
}

/// Adds `x = cap * tanh(x / cap)` to the plan for each token row. x: (batch, n) f32.
pub fn push(plan: &mut Plan, x: &wgpu::Buffer, n: u32, cap: f32) {
    let key = PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(Kernel::Softcap, None)
    };
    let step = plan.step.clone();
    plan.push(
        key,
        &[x, &step],
        super::params(&Params { n, cap }),
        Groups::per_token(n.div_ceil(256)),
    );
}

pub fn reference(x: &[f32], cap: f32) -> Vec<f32> {
    x.iter().map(|v| cap * (v / cap).tanh()).collect()
}

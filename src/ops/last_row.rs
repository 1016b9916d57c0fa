//! A run's last row moved to row 0 (shaders/last_row.wgsl): a prompt chunk's last token handed to the
//! one-token head, so the chunk that ends a prompt also gives the logits after it.

use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
}

/// Adds `x[0] = x[n_tokens - 1]` to the plan. x: (batch, n) f32.
pub fn push(plan: &mut Plan, x: &wgpu::Buffer, n: u32) {
    let key = PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(Kernel::LastRow, None)
    };
    let step = plan.step.clone();
    let groups = Groups::Fixed([n.div_ceil(256), 1, 1]);
    plan.push(key, &[x, &step], super::params(&Params { n }), groups);
}

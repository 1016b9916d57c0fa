//! Greedy decoding's choice on the GPU (shaders/argmax.wgsl): each token row's largest value, the first
//! of equals, so a greedy step reads back 4 bytes instead of its row of n_vocab logits; among the tokens
//! a grammar allows where its row of `Allowed` says so.

use super::allowed::Allowed;
use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    words: u32,
}

/// Adds `out[t] = argmax(x[t])` to the plan for each token row, over the ids row t of `allowed`
/// allows. x: (batch, n) f32; out: (batch) u32.
pub fn push(plan: &mut Plan, x: &wgpu::Buffer, out: &wgpu::Buffer, n: u32, allowed: &Allowed) {
    let key = PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(Kernel::Argmax, None)
    };
    let step = plan.step.clone();
    plan.push(
        key,
        &[x, &step, out, &allowed.buffer],
        super::params(&Params {
            n,
            words: allowed.words,
        }),
        Groups::per_token(1),
    );
}

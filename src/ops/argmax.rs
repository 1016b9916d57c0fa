//! Greedy decoding's choice on the GPU (shaders/argmax.wgsl): each token row's largest value, the first
//! of equals, so a greedy step reads back 8 bytes instead of its row of n_vocab logits; among the tokens
//! a grammar allows where its row of `Allowed` says so. Beside the choices, each one's chance (the
//! row's softmax at it), which a draft model's steps read to stop where it is unsure.

use super::allowed::Allowed;
use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    words: u32,
    rows: u32,
}

/// Adds `out[t] = argmax(x[t])` to the plan for each token row, over the ids row t of `allowed`
/// allows, and `out[batch + t]` its chance (f32 bits). x: (batch, n) f32; out: (2, batch) u32,
/// `choice_bytes(batch)`.
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
            rows: plan.batch,
        }),
        Groups::per_token(1),
    );
}

/// The bytes of `push`'s output for a plan of `batch` rows: each row's choice, then each one's chance.
pub fn choice_bytes(batch: u32) -> u64 {
    2 * batch as u64 * 4
}

//! Greedy decoding's choice on the GPU: each token row's largest value, the first of equals, so a
//! greedy step reads back 8 bytes instead of its row of n_vocab logits; among the tokens a grammar
//! allows where its row of `Allowed` says so. Beside the choices, each one's chance (the row's softmax
//! at it), which a draft model's steps read to stop where it is unsure. In two passes: parts of each
//! row a workgroup each (shaders/argmax_parts.wgsl), then a workgroup a row merges them
//! (shaders/argmax.wgsl), so that a GPU's cores share a row of 150k logits.

use super::allowed::Allowed;
use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    words: u32,
    rows: u32,
    parts: u32,
}

/// Values of a row a workgroup of the first pass takes, at least: 8 a thread.
const PART_VALUES: u32 = 2048;

/// The parts of a row of `n` values the first pass splits it into: at most the second pass's threads,
/// 256, which take a part each (past 512k values, each part takes more).
fn parts(n: u32) -> u32 {
    n.div_ceil(PART_VALUES).clamp(1, 256)
}

/// Adds `out[t] = argmax(x[t])` to the plan for each token row, over the ids row t of `allowed`
/// allows, and `out[batch + t]` its chance (f32 bits). x: (batch, n) f32; out: (2, batch) u32, and
/// the first pass's parts after them: `choice_bytes(batch, n)`.
pub fn push(plan: &mut Plan, x: &wgpu::Buffer, out: &wgpu::Buffer, n: u32, allowed: &Allowed) {
    let params = Params {
        n,
        words: allowed.words,
        rows: plan.batch,
        parts: parts(n),
    };
    let key = |kernel| PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(kernel, None)
    };
    let step = plan.step.clone();
    plan.push(
        key(Kernel::ArgmaxParts),
        &[x, &step, out, &allowed.buffer],
        super::params(&params),
        Groups::per_token(params.parts),
    );
    plan.push(
        key(Kernel::Argmax),
        &[&step, out],
        super::params(&params),
        Groups::per_token(1),
    );
}

/// The bytes of `push`'s output for a plan of `batch` rows of `n` values: each row's choice, then
/// each one's chance, then the first pass's parts (3 words each).
pub fn choice_bytes(batch: u32, n: u32) -> u64 {
    (2 + 3 * parts(n) as u64) * batch as u64 * 4
}

//! Sampling a token on the GPU (shaders/draw.wgsl): after the penalties, a draw from the
//! softmax of a row of logits at a temperature, among the fewest largest that reach top-p, those
//! within min-p of the largest (and a grammar's allowed ones), so a sampled step without a top-k reads
//! back its token, not its row. Top-p's cut is found by narrowing a logit threshold to an eighth of
//! its interval a pass, eight thresholds' masses summed in each (10 passes over the row, where top-p
//! is below 1). The
//! Gumbel-max draw picks each token with its softmax probability; a token's uniform number is a hash
//! of its id and the step's key, which the sampler's seeded generator gives.

use super::allowed::Allowed;
use super::top_k;
use crate::gpu::{scratch_buffer, storage_buffer, Gpu, GpuError, Kernel, PipelineKey, Plan};
use crate::sampler::{Draw, Pick};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    row: u32,
    allowed_at: u32,
}

/// The buffers of a draw plan: the penalty's pick and the draw, written before the step, and the
/// token drawn (a u32).
pub struct Drawn {
    pub pick: wgpu::Buffer,
    pub draw: wgpu::Buffer,
    pub token: wgpu::Buffer,
}

/// Adds to the plan the penalty on row `row` of `logits` (rows of n_vocab) and a draw from it among
/// the ids row `row` of `allowed` allows.
pub async fn push(
    plan: &mut Plan,
    gpu: &Gpu,
    logits: &wgpu::Buffer,
    n_vocab: u32,
    (row, allowed): (u32, &Allowed),
) -> Result<Drawn, GpuError> {
    let pick = Pick::none();
    let pick = storage_buffer(gpu, "draw's penalty", bytemuck::bytes_of(&pick));
    let draw = Draw::new(1.0, 1.0, 0.0, 0);
    let draw = storage_buffer(gpu, "draw", bytemuck::bytes_of(&draw));
    let token = scratch_buffer(gpu, "token drawn", 4).await?;
    let at = row * n_vocab;
    top_k::push_penalty(plan, logits, &pick, n_vocab, at);
    let params = Params {
        n: n_vocab,
        row: at,
        allowed_at: allowed.row_at(row),
    };
    let key = PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(Kernel::Draw, None)
    };
    plan.push(
        key,
        &[logits, &allowed.buffer, &draw, &token],
        super::params(&params),
        [1, 1, 1],
    );
    Ok(Drawn { pick, draw, token })
}

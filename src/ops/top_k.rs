//! The sampler's candidates on the GPU (shaders/penalize.wgsl, shaders/top_k.wgsl): the penalties on
//! the logits of the recent tokens, then the k largest logits with their ids, largest first,
//! so a sampled step reads back k pairs (8 bytes each) instead of its row of n_vocab logits; and the
//! log of the sum of the row's exponentials after the K_MAX slots, which makes a candidate's logit its
//! log-probability (4 bytes more, read where log-probabilities are asked for).

use super::allowed::Allowed;
use crate::gpu::{scratch_buffer, storage_buffer, Gpu, GpuError, Kernel, PipelineKey, Plan};
use crate::sampler::{Choose, Pick, K_MAX, PENALIZED_MAX};

/// Inputs per workgroup of a level: 128 threads, 16 values each.
const SLICE: u32 = 128 * 16;
/// A slot id that holds no candidate.
const NONE: u32 = u32::MAX;

/// The buffers of the candidates plan: what the sampler asks, and where the last level writes.
pub struct Candidates {
    pub pick: wgpu::Buffer,
    pub choose: wgpu::Buffer,
    /// K_MAX (value f32, id u32) pairs, the first `k` read back; then (at byte `LOG_SUM_EXP_AT`) the
    /// log of the sum of the exponentials of the penalized logits, and (at `CHOSEN_AT`) the token
    /// chosen among them.
    pub result: wgpu::Buffer,
}

/// Where `Candidates::result` holds the log-sum-exp, in bytes.
pub const LOG_SUM_EXP_AT: u64 = K_MAX as u64 * 8;
/// Where `Candidates::result` holds the token chosen, in bytes.
pub const CHOSEN_AT: u64 = LOG_SUM_EXP_AT + 4;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct PenalizeParams {
    n: u32,
    row: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct LogSumExpParams {
    n: u32,
    at: u32,
    row: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct LevelParams {
    n: u32,
    from_logits: u32,
    row: u32,
    allowed_at: u32,
}

/// Adds the penalties `pick` asks for on the row of `logits` at `row` (in floats), in place.
pub fn push_penalty(plan: &mut Plan, logits: &wgpu::Buffer, pick: &wgpu::Buffer, n: u32, row: u32) {
    plan.push(
        PipelineKey::new(Kernel::Penalize, None),
        &[logits, pick],
        super::params(&PenalizeParams { n, row }),
        [(PENALIZED_MAX as u32).div_ceil(64), 1, 1],
    );
}

/// Adds to the plan the penalty on row `row` of `logits` (rows of n_vocab), the levels of the top-k
/// over the ids that row `row` of `allowed` allows, each a slice of the level before per workgroup (2
/// levels for 49k logits, 3 for 262k), and the log-sum-exp of the penalized row (all of it: a
/// log-probability is the model's, before a grammar).
pub async fn push(
    plan: &mut Plan,
    gpu: &Gpu,
    logits: &wgpu::Buffer,
    n_vocab: u32,
    (row, allowed): (u32, &Allowed),
) -> Result<Candidates, GpuError> {
    let allowed_at = allowed.row_at(row);
    let row = row * n_vocab;
    let pick = storage_buffer(gpu, "sampler pick", bytemuck::bytes_of(&Pick::none()));
    let choose = Choose {
        temperature: 0.0,
        top_p: 1.0,
        min_p: 0.0,
        r: 0.0,
        k: 1,
    };
    let choose = storage_buffer(gpu, "sampler choice", bytemuck::bytes_of(&choose));
    let slots = (n_vocab.div_ceil(SLICE) as u64 * K_MAX as u64 * 8).max(CHOSEN_AT + 4);
    let mut src = scratch_buffer(gpu, "top-k candidates", slots).await?;
    let mut dst = scratch_buffer(gpu, "top-k candidates", slots).await?;
    push_penalty(plan, logits, &pick, n_vocab, row);
    let level = PipelineKey {
        workgroup: 128,
        ..PipelineKey::new(Kernel::TopK, None)
    };
    let (mut n, mut from_logits) = (n_vocab, 1);
    loop {
        let slices = n.div_ceil(SLICE);
        plan.push(
            level,
            &[logits, &src, &pick, &dst, &allowed.buffer],
            super::params(&LevelParams {
                n,
                from_logits,
                row,
                allowed_at,
            }),
            [slices, 1, 1],
        );
        if slices == 1 {
            let key = PipelineKey {
                workgroup: 256,
                ..PipelineKey::new(Kernel::LogSumExp, None)
            };
            let at = (LOG_SUM_EXP_AT / 4) as u32;
            let params = LogSumExpParams {
                n: n_vocab,
                at,
                row,
            };
            plan.push(key, &[logits, &dst], super::params(&params), [1, 1, 1]);
            let key = PipelineKey {
                workgroup: 1,
                ..PipelineKey::new(Kernel::Choose, None)
            };
            let chosen_at = (CHOSEN_AT / 4) as u32;
            plan.push(key, &[&dst, &choose], super::params(&chosen_at), [1, 1, 1]);
            return Ok(Candidates {
                pick,
                choose,
                result: dst,
            });
        }
        n = slices * K_MAX;
        from_logits = 0;
        std::mem::swap(&mut src, &mut dst);
    }
}

/// The candidates read back: (id, logit) pairs, largest first, without the empty slots (and
/// whatever follows the first `k`, where more was read).
pub fn candidates(bytes: &[u8], k: u32) -> Vec<(u32, f32)> {
    let bytes = &bytes[..k as usize * 8];
    let words: Vec<u32> = bytemuck::pod_collect_to_vec(bytes);
    words
        .chunks_exact(2)
        .filter(|pair| pair[1] != NONE)
        .map(|pair| (pair[1], f32::from_bits(pair[0])))
        .collect()
}

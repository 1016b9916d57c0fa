//! Grouped-query attention of the run's queries over the KV cache (causal, windowed, both ways):
//! shaders/attention.wgsl, a workgroup per group of heads and token (4 tokens in a step's run); for a
//! prompt's chunk, shaders/attention_tiled.wgsl (a workgroup per head and 64 queries) or
//! attention_rows.wgsl (a few queries, their heads split over threads) over tiles of keys (flash
//! attention, in the form tuned); for a step's tokens over a long cache shaders/attention_split.wgsl
//! (a key a thread) or attention_split_lanes.wgsl (a head's dims over a subgroup's lanes), in the
//! form tuned, then attention_merge.wgsl: each token's keys split over many workgroups
//! (flash-decoding).

use crate::gpu::{attention_tile_bytes, attention_workgroup, head_groups};
use crate::gpu::{Adapter, AttentionShape, Groups, Kernel, KvType, PipelineKey, Plan};

/// shaders/attention_params.wgsl: attention.wgsl's and attention_tiled.wgsl's.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    scale: f32,
    window: u32,
    softcap: f32,
    sinks: u32,
    causal: u32,
    both_ways_from: u32,
    step: u32,
}

/// The heads attention runs over and how it scores keys.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub n_head: u32,
    pub n_kv_head: u32,
    /// A multiple of 4, at most `MAX_HEAD_DIM`.
    pub head_dim: u32,
    /// Scores are q.k times this (1 / sqrt(head_dim) in most models).
    pub scale: f32,
    /// Keys a query sees, its own included (a sliding-window layer); 0: all before it.
    pub window: u32,
    /// Scores are soft-capped, cap * tanh(score / cap), after scaling (Gemma 2); 0: not.
    pub softcap: f32,
    /// A query sees the keys before it (a decoder). Where false (an embedding model's encoder) it
    /// sees every key of the run, within half the window on either side on a sliding-window layer;
    /// the whole input must then be one run.
    pub causal: bool,
    /// Where causal, tokens of ids from this one on see every token of their segment, the later
    /// ones too: rows given in place of token embeddings (an image's tokens, `Engine::hold_image`), which
    /// Gemma 3 attends both ways; the engine puts such a span in a segment of its own. u32::MAX: none.
    pub both_ways_from: u32,
}

impl Shape {
    /// Every key before the query, scored by 1 / sqrt(head_dim).
    pub fn causal(n_head: u32, n_kv_head: u32, head_dim: u32) -> Shape {
        Shape {
            n_head,
            n_kv_head,
            head_dim,
            scale: 1.0 / (head_dim as f32).sqrt(),
            window: 0,
            softcap: 0.0,
            causal: true,
            both_ways_from: u32::MAX,
        }
    }
}

/// The kernel keeps each thread's share of a head's output in registers: 4 values for each of its
/// threads, 64 of them, or as many as heads of more than 256 dimensions need (Gemma 4's 512).
pub const MAX_HEAD_DIM: u32 = 512;

/// Tokens of a prompt's chunk a workgroup attends at once (TQ in attend.wgsl): each key and value
/// read serves their queries, whose causal ranges nest. In a step (`Plan::is_step`) a workgroup
/// takes as many consecutive tokens of one sequence (a speculative check's), and a token of each
/// other sequence alone: their ranges lie apart in the cache (shaders/check_tokens.wgsl).
const QUERY_TILE: u32 = 4;

pub struct AttentionBuffers<'a> {
    /// (batch, n_head, head_dim)
    pub q: &'a wgpu::Buffer,
    /// (n_ctx, n_kv_head, head_dim), written up to each query's position
    pub k_cache: &'a wgpu::Buffer,
    pub v_cache: &'a wgpu::Buffer,
    /// How the cache holds its values.
    pub cache_type: KvType,
    /// (batch, n_head, head_dim)
    pub out: &'a wgpu::Buffer,
    /// (n_head) each head's sink (gpt-oss): a logit in the softmax with no value, which takes a share
    /// of the weight from the keys.
    pub sinks: Option<&'a wgpu::Buffer>,
}

impl AttentionBuffers<'_> {
    /// The sinks' binding, q where there are none (the kernel then reads nothing from it).
    fn sinks_or_q(&self) -> &wgpu::Buffer {
        self.sinks.unwrap_or(self.q)
    }
}

/// Adds attention for each token of the run: token t, at position pos + t, attends to positions
/// 0..=pos + t (the last `window` of them on a sliding-window layer), or to its segment's end where
/// its id is from `both_ways_from` on; without `causal`, to every position of the run (those within
/// window / 2 of its own on a sliding-window layer).
pub fn push(plan: &mut Plan, s: Shape, b: &AttentionBuffers) {
    assert!(s.head_dim.is_multiple_of(4) && s.head_dim <= MAX_HEAD_DIM);
    let in_step = plan.is_step();
    let p = Params {
        step: in_step as u32,
        ..params(s, b)
    };
    let step = plan.step.clone();
    // A step's workgroups are a token's each (those of a check's later tokens leave at once, where
    // its first token's workgroup takes them). Where workgroups run on the CPU a workgroup takes its
    // own token alone: there a check's attention waits on each query's dots and exponentials, not
    // on reading the keys, and a workgroup holding four tokens' sums spends more (BENCHMARKS.md).
    let (tokens, per) = match (in_step, plan.adapter.runs_on_cpu) {
        (true, false) => (QUERY_TILE.min(plan.batch), 1),
        (true, true) => (1, 1),
        (false, _) => (QUERY_TILE, QUERY_TILE),
    };
    plan.push(
        PipelineKey {
            workgroup: attention_workgroup(s.head_dim),
            tokens: (tokens > 1).then_some(tokens),
            ..PipelineKey::new(Kernel::Attention(b.cache_type), None)
        },
        &[b.q, b.k_cache, b.v_cache, b.out, &step, b.sinks_or_q()],
        super::params(&p),
        Groups::PerTokens {
            x: head_groups(s.n_head, s.n_kv_head),
            per,
            z: 1,
        },
    );
}

/// The kernels' parameters (shaders/attention.wgsl's and attention_tiled.wgsl's).
fn params(s: Shape, b: &AttentionBuffers) -> Params {
    Params {
        n_head: s.n_head,
        n_kv_head: s.n_kv_head,
        head_dim: s.head_dim,
        scale: s.scale,
        window: s.window,
        softcap: s.softcap,
        sinks: b.sinks.is_some() as u32,
        causal: s.causal as u32,
        both_ways_from: s.both_ways_from,
        step: 0,
    }
}

/// Heads `push_tiled` takes at most: a thread holds its query and output rows.
pub const TILED_MAX_HEAD_DIM: u32 = 256;

/// Whether the tiled kernel takes heads of `head_dim` dimensions where the adapter's workgroup
/// memory is `workgroup_bytes` (its tiles).
pub fn tiled_takes(head_dim: u32, workgroup_bytes: u32) -> bool {
    head_dim.is_multiple_of(4)
        && head_dim <= TILED_MAX_HEAD_DIM
        && attention_tile_bytes(head_dim) <= workgroup_bytes
}

/// As `push`, for runs of many queries (a vision encoder's thousands of patches): a workgroup per
/// head and 64 queries, a thread each (shaders/attention_tiled.wgsl), walking their keys in tiles
/// held in workgroup memory, each key and value read once for the 64. Where the heads are wider than
/// the tiles take or the adapter's workgroup memory does not hold them (`tiled_takes`), `push`.
pub fn push_tiled(plan: &mut Plan, s: Shape, b: &AttentionBuffers) {
    push_in_tiles(plan, s, b, false);
}

/// `push_tiled` for a prompt's chunk, in the form the plan's tuning gives the shape
/// (`AttentionForm`: 64 queries a thread each, or a few queries whose heads are split over threads,
/// shaders/attention_rows.wgsl). The tuner times the forms on the model's own steps, so a plan with
/// a step of its own (a vision encoder's) keeps `push_tiled`'s.
pub fn push_chunk(plan: &mut Plan, s: Shape, b: &AttentionBuffers) {
    push_in_tiles(plan, s, b, true);
}

fn push_in_tiles(plan: &mut Plan, s: Shape, b: &AttentionBuffers, tuned: bool) {
    if !tiled_takes(s.head_dim, plan.adapter.workgroup_bytes) {
        return push(plan, s, b);
    }
    let shape = AttentionShape {
        heads: s.n_head,
        kv_heads: s.n_kv_head,
        head_dim: s.head_dim,
        tokens: plan.batch,
        cache: b.cache_type,
        splits: None,
        latent: None,
    };
    let form = match tuned {
        true => plan.attention(&shape),
        false => shape.default_form(plan.adapter),
    };
    let step = plan.step.clone();
    plan.push_attention(
        (shape, tuned),
        form,
        &[b.q, b.k_cache, b.v_cache, b.out, &step, b.sinks_or_q()],
        super::params(&params(s, b)),
    );
}

/// The splits of a decode step's attention over the keys for a layer of `n_head` query heads over
/// `n_kv_head` kv heads on `adapter`, whose groups of heads each take a workgroup a split. On a GPU,
/// as many as make the adapter's `split_workgroups`, 16 to 64, each of whole rounds of keys (the last
/// splits empty where the keys are few). Where workgroups run on the CPU, 16: a couple of cores gain
/// nothing from more, and each split's workgroup and its share of the merge cost time (64 splits
/// took SmolLM2's decode at 2048 from 2.60 to 2.03 tok/s on lavapipe).
pub fn splits(n_head: u32, n_kv_head: u32, adapter: Adapter) -> u32 {
    match adapter.runs_on_cpu {
        true => 16,
        false => (adapter.split_workgroups / head_groups(n_head, n_kv_head)).clamp(16, 64),
    }
}

/// shaders/split_params.wgsl: the split kernels'.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SplitParams {
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    scale: f32,
    n_split: u32,
    window: u32,
    softcap: f32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct MergeParams {
    n_head: u32,
    head_dim: u32,
    n_split: u32,
    sinks: u32,
}

/// Bytes of the scratch `push_split` needs for a plan of `tokens`: each split's partial sums, max
/// and weight, per head and token.
pub fn split_scratch_bytes(tokens: u32, n_head: u32, head_dim: u32, n_split: u32) -> u64 {
    tokens as u64 * n_head as u64 * n_split as u64 * (head_dim as u64 + 2) * 4
}

/// As `push` for a step's plan (`Plan::is_step`: a token of each sequence, or a speculative check's
/// tokens), with each token's keys split `n_split` ways, each split a workgroup per group of heads
/// and token in the form the plan's tuning gives the shape of its tokens (`AttentionForm::SplitKeys`
/// or `SplitLanes`, timed deep into a context), then merged: two dispatches. `parts` holds
/// `split_scratch_bytes` of the plan's batch.
pub fn push_split(
    plan: &mut Plan,
    s: Shape,
    n_split: u32,
    b: &AttentionBuffers,
    parts: &wgpu::Buffer,
) {
    let Shape {
        n_head, head_dim, ..
    } = s;
    assert!(head_dim % 4 == 0 && head_dim <= MAX_HEAD_DIM && plan.is_step() && s.causal);
    let p = SplitParams {
        n_head,
        n_kv_head: s.n_kv_head,
        head_dim,
        scale: s.scale,
        n_split,
        window: s.window,
        softcap: s.softcap,
    };
    let shape = AttentionShape {
        heads: n_head,
        kv_heads: s.n_kv_head,
        head_dim,
        tokens: plan.batch,
        cache: b.cache_type,
        splits: Some(n_split),
        latent: None,
    };
    let form = plan.attention(&shape);
    let step = plan.step.clone();
    plan.push_attention(
        (shape, true),
        form,
        &[b.q, b.k_cache, b.v_cache, parts, &step],
        super::params(&p),
    );
    push_merge(plan, (n_head, head_dim, n_split), parts, b.out, b.sinks);
}

/// The splits a merge takes at most (the workgroup memory of shaders/attention_merge.wgsl holds a
/// factor each); `splits` makes at most 64.
pub const MERGED_SPLITS_MAX: u32 = 256;

/// Adds the merge of the `n_split` splits' states in `parts` (`split_scratch_bytes`) of each of
/// `n_head` heads of `head_dim` of each of the run's tokens into `out`
/// (shaders/attention_merge.wgsl), the heads' sinks taking their share where given.
pub fn push_merge(
    plan: &mut Plan,
    (n_head, head_dim, n_split): (u32, u32, u32),
    parts: &wgpu::Buffer,
    out: &wgpu::Buffer,
    sinks: Option<&wgpu::Buffer>,
) {
    assert!(n_split <= MERGED_SPLITS_MAX, "{n_split} splits to merge");
    let p = MergeParams {
        n_head,
        head_dim,
        n_split,
        sinks: sinks.is_some() as u32,
    };
    plan.push(
        PipelineKey::new(Kernel::AttentionMerge, None),
        // Without sinks the kernel reads nothing from their binding: parts stands in.
        &[parts, out, sinks.unwrap_or(parts)],
        super::params(&p),
        Groups::per_token(n_head),
    );
}

/// CPU reference for one query head over `n` cached positions, scoring by 1 / sqrt(head_dim). k, v:
/// (n, head_dim) for its kv head.
pub fn reference(q: &[f32], k: &[f32], v: &[f32], head_dim: usize) -> Vec<f32> {
    reference_scored(q, k, v, head_dim, (1.0 / (head_dim as f32).sqrt(), 0.0))
}

/// As `reference`, scoring by `scale` and soft-capping the scores at `softcap` (0: not).
pub fn reference_scored(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    head_dim: usize,
    scoring: (f32, f32),
) -> Vec<f32> {
    reference_with_sink(q, k, v, head_dim, scoring, None)
}

/// As `reference_scored`, with the head's sink logit (if any) in the softmax.
pub fn reference_with_sink(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    head_dim: usize,
    (scale, softcap): (f32, f32),
    sink: Option<f32>,
) -> Vec<f32> {
    let n = k.len() / head_dim;
    let scores: Vec<f32> = (0..n)
        .map(|p| {
            q.iter()
                .zip(&k[p * head_dim..])
                .map(|(a, b)| a * b)
                .sum::<f32>()
                * scale
        })
        .map(|s| match softcap {
            0.0 => s,
            cap => cap * (s / cap).tanh(),
        })
        .collect();
    let max = scores
        .iter()
        .chain(&sink)
        .cloned()
        .fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = scores.iter().map(|s| (s - max).exp()).collect();
    let sum: f32 = e.iter().sum::<f32>() + sink.map_or(0.0, |s| (s - max).exp());
    (0..head_dim)
        .map(|d| (0..n).map(|p| e[p] * v[p * head_dim + d]).sum::<f32>() / sum)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a GPU a step's attention splits into as many splits as make the adapter's workgroups a
    /// layer (16 to 64); where workgroups run on the CPU, into 16.
    #[test]
    fn splits_make_the_workgroups_asked() {
        let gpu = Adapter {
            workgroup_bytes: 49152,
            runs_on_cpu: false,
            split_workgroups: 256,
        };
        let cpu = Adapter {
            runs_on_cpu: true,
            ..gpu
        };
        let wide = |split_workgroups| Adapter {
            split_workgroups,
            ..gpu
        };
        // Llama 3.1 8B: 32 heads over 8 kv heads, 8 groups of 4.
        assert_eq!(splits(32, 8, gpu), 32);
        assert_eq!(splits(32, 8, wide(512)), 64);
        assert_eq!(splits(32, 8, wide(4096)), 64, "at most 64");
        assert_eq!(splits(32, 32, gpu), 16, "at least 16");
        assert_eq!(splits(32, 8, cpu), 16);
        assert_eq!(
            splits(
                32,
                8,
                Adapter {
                    split_workgroups: 512,
                    ..cpu
                }
            ),
            16
        );
    }
}

//! Multi-head Latent Attention (DeepSeek-V2) in absorbed form: the cache write (shaders/mla_kv.wgsl) and
//! attention in the latent space (shaders/mla_attention.wgsl), for each token of the run. Each position
//! caches kv_lora latent values and n_rot rope values, once for all heads; k_b takes each head's query
//! into the latent space before attention and v_b takes its output out after it
//! (matvec::push_grouped). In that form MLA is multi-query attention whose key is a cache row and whose
//! value is the row's latent, so it runs on the grouped-query kernels' online softmax
//! (shaders/attend.wgsl); a prompt's chunk and a deep step's split also on the adapter's matrix
//! cores, as products of its queries by tiles of cache rows (shaders/mla_attention_coop.wgsl), where
//! the tuner times them faster.

use super::rope::{Rope, RopeParams};
use crate::gpu::MAX_LATENT;
use crate::gpu::{AttentionForm, AttentionShape, Kernel, KvType, PipelineKey, Plan};

/// The shape of a layer's MLA.
#[derive(Clone, Copy, Debug)]
pub struct Mla {
    pub n_head: u32,
    pub kv_lora: u32,
    /// Per head: the query's no-rope and rope parts (the rope part has rope.n_rot values), and V's size.
    pub q_nope: u32,
    pub v_dim: u32,
    pub rope: Rope,
    /// Softmax scale of q . k.
    pub scale: f32,
    /// How the cache holds its rows: f16 on GPUs, as every other attention's (`LoadOptions::kv_cache`).
    pub cache: KvType,
}

impl Mla {
    /// Floats per head in the query: the no-rope part, then the rope part.
    pub fn q_stride(&self) -> u32 {
        self.q_nope + self.rope.n_rot
    }

    /// Values per cached position.
    pub fn cache_width(&self) -> u32 {
        self.kv_lora + self.rope.n_rot
    }

    /// Bytes of a cache of `n_ctx` positions.
    pub fn cache_bytes(&self, n_ctx: u32) -> u64 {
        n_ctx as u64 * self.cache_width() as u64 * self.cache.value_bytes()
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct KvParams {
    rope: RopeParams,
    kv_lora: u32,
    eps: f32,
    _pad: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct AttentionParams {
    rope: RopeParams,
    n_head: u32,
    kv_lora: u32,
    q_stride: u32,
    q_rope: u32,
    scale: f32,
    softcap: f32,
    n_split: u32,
}

/// Adds the cache write of each token's compressed kv ((batch, kv_lora + n_rot)): latent normed by
/// `norm`, rope part rotated by the pairs' frequencies in `freqs` (`Rope::freqs_buffer`), into the
/// token's row of `cache`.
pub fn push_kv(
    plan: &mut Plan,
    m: &Mla,
    kv: &wgpu::Buffer,
    (norm, eps): (&wgpu::Buffer, f32),
    freqs: &wgpu::Buffer,
    cache: &wgpu::Buffer,
) {
    let p = KvParams {
        rope: m.rope.params(),
        kv_lora: m.kv_lora,
        eps,
        _pad: [0; 2],
    };
    let key = PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(Kernel::MlaKv(m.cache), None)
    };
    let step = plan.step.clone();
    plan.push(
        key,
        &[kv, norm, cache, freqs, &step],
        super::params(&p),
        [plan.batch, 1, 1],
    );
}

/// The buffers attention reads and writes.
pub struct AttentionBuffers<'a> {
    /// (batch, n_head, kv_lora): each head's no-rope query through k_b.
    pub q_latent: &'a wgpu::Buffer,
    /// (batch, n_head, q_stride): the query; its rope part is rotated as it is read.
    pub q: &'a wgpu::Buffer,
    /// (n_ctx, kv_lora + n_rot), as `Mla::cache` holds them
    pub cache: &'a wgpu::Buffer,
    /// (n_rot / 2) each rope pair's frequency (`Rope::freqs_buffer`).
    pub freqs: &'a wgpu::Buffer,
    /// (batch, n_head, kv_lora)
    pub out: &'a wgpu::Buffer,
}

/// Adds attention for each token of the run: token t, at position pos + t, attends to positions
/// 0..=pos + t. A step's tokens take a workgroup each (their sequences' rows lie apart); a prompt's
/// chunk takes its tuned form (`attention_shape`): several tokens a workgroup, or tiles on the matrix
/// cores.
pub fn push_attention(plan: &mut Plan, m: &Mla, b: &AttentionBuffers) {
    let (form, tuned) = match plan.is_step() {
        true => (AttentionForm::Latent { tokens: 1 }, false),
        false => (plan.attention(&attention_shape(m, plan.batch, None)), true),
    };
    push_in(plan, m, (b, b.out), (form, None), tuned);
}

/// The tunable attention shape of a run of `tokens`: a prompt's chunk, or a step's with each
/// token's keys split `splits` ways.
pub fn attention_shape(m: &Mla, tokens: u32, splits: Option<u32>) -> AttentionShape {
    AttentionShape {
        heads: m.n_head,
        kv_heads: 1,
        head_dim: m.cache_width(),
        tokens,
        cache: m.cache,
        splits,
        latent: Some(m.kv_lora),
    }
}

/// `push_attention` for a prompt's chunk in `form` (one of its shape's), which tuning may change.
pub fn push_chunk_in(plan: &mut Plan, m: &Mla, b: &AttentionBuffers, form: AttentionForm) {
    push_in(plan, m, (b, b.out), (form, None), true);
}

/// As `push_attention` for a step's plan (`Plan::is_step`), with each token's keys split `n_split`
/// ways in the tuned form (a workgroup per group of heads, token and split; or on the matrix cores,
/// per `size` of a token's heads and split), then merged: two dispatches. `parts` holds
/// `attention::split_scratch_bytes(plan.batch, n_head, kv_lora, n_split)`.
pub fn push_attention_split(
    plan: &mut Plan,
    m: &Mla,
    b: &AttentionBuffers,
    n_split: u32,
    parts: &wgpu::Buffer,
) {
    let form = plan.attention(&attention_shape(m, plan.batch, Some(n_split)));
    push_split_in(plan, m, b, (n_split, parts), form);
}

/// `push_attention_split` in `form` (one of its shape's), which tuning may change.
pub fn push_split_in(
    plan: &mut Plan,
    m: &Mla,
    b: &AttentionBuffers,
    (n_split, parts): (u32, &wgpu::Buffer),
    form: AttentionForm,
) {
    assert!(plan.is_step() && n_split > 0);
    push_in(plan, m, (b, parts), (form, Some(n_split)), true);
    let heads = (m.n_head, m.kv_lora, n_split);
    super::attention::push_merge(plan, heads, parts, b.out, None);
}

/// The run's attention (its keys split `splits` ways, or not) in `form`, into `out` (the output, or
/// the splits' parts); where `tuned`, tuning may change the form.
fn push_in(
    plan: &mut Plan,
    m: &Mla,
    (b, out): (&AttentionBuffers, &wgpu::Buffer),
    (form, splits): (AttentionForm, Option<u32>),
    tuned: bool,
) {
    assert!(
        m.kv_lora <= MAX_LATENT && m.rope.n_rot <= 128 && m.rope.n_rot.is_multiple_of(4),
        "the kernel holds a latent of at most {MAX_LATENT} and at most 128 rope values, in vec4s"
    );
    let shape = attention_shape(m, plan.batch, splits);
    let step = plan.step.clone();
    let buffers = [b.q_latent, b.q, b.cache, b.cache, out, b.freqs, &step];
    let params = params(m, splits.unwrap_or(0));
    plan.push_attention((shape, tuned), form, &buffers, super::params(&params));
}

fn params(m: &Mla, n_split: u32) -> AttentionParams {
    AttentionParams {
        rope: m.rope.params(),
        n_head: m.n_head,
        kv_lora: m.kv_lora,
        q_stride: m.q_stride(),
        q_rope: m.q_nope,
        scale: m.scale,
        softcap: 0.0,
        n_split,
    }
}

/// CPU reference of one layer's attention output (n_head * v_dim) at the last cached position, in the
/// naive form: each head's keys and values decompressed from the latent cache, then plain attention.
/// `q`: (n_head, q_stride) already rotated; `cache`: (n, kv_lora + n_rot) already normed and rotated;
/// `k_b`: (n_head, kv_lora, q_nope) and `v_b`: (n_head, v_dim, kv_lora), dequantized.
pub fn reference_naive(m: &Mla, q: &[f32], cache: &[f32], k_b: &[f32], v_b: &[f32]) -> Vec<f32> {
    let (l, r, nope, vd) = (
        m.kv_lora as usize,
        m.rope.n_rot as usize,
        m.q_nope as usize,
        m.v_dim as usize,
    );
    let n = cache.len() / (l + r);
    let mut out = Vec::with_capacity(m.n_head as usize * vd);
    for h in 0..m.n_head as usize {
        let qh = &q[h * (nope + r)..(h + 1) * (nope + r)];
        let kb = &k_b[h * l * nope..(h + 1) * l * nope]; // (kv_lora, q_nope)
        let vb = &v_b[h * vd * l..(h + 1) * vd * l]; // (v_dim, kv_lora)
        let mut scores = Vec::with_capacity(n);
        let mut values = Vec::with_capacity(n);
        for p in 0..n {
            let latent = &cache[p * (l + r)..p * (l + r) + l];
            let rope = &cache[p * (l + r) + l..(p + 1) * (l + r)];
            // k_nope[i] = sum_c k_b[c][i] * latent[c]; v[j] = sum_c v_b[j][c] * latent[c]
            let k_nope: Vec<f32> = (0..nope)
                .map(|i| (0..l).map(|c| kb[c * nope + i] * latent[c]).sum())
                .collect();
            let v: Vec<f32> = (0..vd)
                .map(|j| (0..l).map(|c| vb[j * l + c] * latent[c]).sum())
                .collect();
            let dot: f32 = qh[..nope]
                .iter()
                .zip(&k_nope)
                .map(|(a, b)| a * b)
                .sum::<f32>()
                + qh[nope..].iter().zip(rope).map(|(a, b)| a * b).sum::<f32>();
            scores.push(dot * m.scale);
            values.push(v);
        }
        let top = scores.iter().cloned().fold(f32::MIN, f32::max);
        let e: Vec<f32> = scores.iter().map(|s| (s - top).exp()).collect();
        let sum: f32 = e.iter().sum();
        out.extend((0..vd).map(|j| (0..n).map(|p| e[p] * values[p][j]).sum::<f32>() / sum));
    }
    out
}

/// CPU reference of absorbed attention's output in the latent space for a run of tokens from position
/// `pos`, causal: each (token, head) row of `queries` (its latent query, then its rope part rotated,
/// already times the scale: `cache_width` values) against the cache rows up to its token's own, the
/// weighted sum of their latents (kv_lora values a row).
pub fn reference_absorbed(m: &Mla, queries: &[f32], cache: &[f32], pos: usize) -> Vec<f32> {
    let (heads, l, width) = (
        m.n_head as usize,
        m.kv_lora as usize,
        m.cache_width() as usize,
    );
    let mut out = Vec::with_capacity(queries.len() / width * l);
    for (row, query) in queries.chunks(width).enumerate() {
        let rows = &cache[..(pos + row / heads + 1) * width];
        let scores: Vec<f32> = (rows.chunks(width))
            .map(|key| query.iter().zip(key).map(|(a, b)| a * b).sum())
            .collect();
        let top = scores.iter().cloned().fold(f32::MIN, f32::max);
        let weights: Vec<f32> = scores.iter().map(|s| (s - top).exp()).collect();
        let sum: f32 = weights.iter().sum();
        out.extend((0..l).map(|j| {
            let weighted = weights
                .iter()
                .zip(rows.chunks(width))
                .map(|(w, key)| w * key[j]);
            weighted.sum::<f32>() / sum
        }));
    }
    out
}

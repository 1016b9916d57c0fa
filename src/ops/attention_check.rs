//! Whether a prompt's attention on the matrix cores (shaders/attention_coop.wgsl, and Multi-head
//! Latent Attention's shaders/mla_attention_coop.wgsl) builds on this device and gives the right
//! numbers, in every form the tuner would offer: as with the products on them
//! (`ops::matvec::matrix_cores_work`), a driver's first use of cooperative matrices is where a
//! compiler may fail or err, and a wrong form that is fast would win the tuning.

use super::attention::{self, AttentionBuffers, Shape};
use super::mla::{self, Mla};
use super::rope::Rope;
use crate::gpu::{read_back_f32, scratch_buffer, storage_buffer, Gpu, KvType, Plan, StepInput};
use crate::gpu::{AttentionForm, AttentionShape, Choice, Tunable, Tuning};

/// The check's heads: two query heads of 64 over one kv head, a chunk of 70 tokens from position 0
/// (a block of queries and part of one, keys in several tiles, the last partly seen), causal.
const HEADS: (u32, u32, u32) = (2, 1, 64);
const TOKENS: u32 = 70;

/// Off by more than this (normalized mean squared error against the CPU in f32), a form is wrong:
/// its f16 queries, keys, values and weights keep it near 1e-7 (tests/ops_attention.rs).
const CHECK_NMSE: f64 = 1e-5;

/// Every form on the matrix cores that the tuner would offer this device agrees with the CPU (true
/// where it would offer none); false where one fails to build or errs.
pub async fn matrix_attention_works(gpu: &Gpu) -> Result<bool, crate::Error> {
    let (n_head, n_kv_head, head_dim) = HEADS;
    let shape = AttentionShape {
        heads: n_head,
        kv_heads: n_kv_head,
        head_dim,
        tokens: TOKENS,
        cache: KvType::F16,
        splits: None,
        latent: None,
    };
    let forms: Vec<_> = (shape.candidates(gpu.offers(), gpu.adapter()).into_iter())
        .filter(|f| f.rounding().is_some())
        .collect();
    if forms.is_empty() {
        return Ok(true);
    }
    let (n, hd) = (TOKENS as usize, head_dim as usize);
    let wave = |i: usize, scale: f32| (i as f32 * 0.618).sin() * scale;
    let q: Vec<f32> = (0..n * n_head as usize * hd)
        .map(|i| wave(i, 2.0))
        .collect();
    let kv_len = n * n_kv_head as usize * hd;
    // Rounded to f16 as the cache holds them, so that the CPU reads what the GPU does.
    let rounded = |v: f32| half::f16::from_f32(v).to_f32();
    let k: Vec<f32> = (0..kv_len).map(|i| rounded(wave(i + 11, 1.5))).collect();
    let v: Vec<f32> = (0..kv_len).map(|i| rounded(wave(i + 29, 1.0))).collect();
    let s = Shape::causal(n_head, n_kv_head, head_dim);
    let mut want = Vec::with_capacity(q.len());
    for t in 0..n {
        for h in 0..n_head as usize {
            let q_h = &q[(t * n_head as usize + h) * hd..][..hd];
            // One kv head: a key's row is its head's.
            let seen = (t + 1) * hd;
            want.extend(attention::reference(q_h, &k[..seen], &v[..seen], hd));
        }
    }
    let qb = storage_buffer(gpu, "attention check q", bytemuck::cast_slice(&q));
    let kb = storage_buffer(gpu, "attention check k", &f16_words(&k));
    let vb = storage_buffer(gpu, "attention check v", &f16_words(&v));
    let out = scratch_buffer(gpu, "attention check out", want.len() as u64 * 4).await?;
    let step = StepInput::with(gpu, 0, &vec![0; n]);
    let mut plan = Plan::new(gpu, &step, TOKENS);
    let buffers = AttentionBuffers {
        q: &qb,
        k_cache: &kb,
        v_cache: &vb,
        cache_type: KvType::F16,
        out: &out,
        sinks: None,
    };
    attention::push_chunk(&mut plan, s, &buffers);
    plan.finish(gpu).await?;
    for form in forms {
        let mut tuning = Tuning::default();
        tuning.insert(&Tunable::Attention(shape), Choice::Attention(form));
        let ran = plan
            .run_checked(gpu, &tuning, "the matrix-core attention check")
            .await;
        if ran.is_err() {
            return Ok(false);
        }
        let got = read_back_f32(gpu, &out, want.len()).await?;
        if nmse(&got, &want) > CHECK_NMSE {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The latent check's shape: two heads over DeepSeek-V2's cache rows (a latent of 512 and 64 rope
/// values) in an f16 cache, as GPUs keep it, a chunk of 40 tokens from position 0 (rows of two
/// workgroups or more, keys in several tiles), then the last of them again as a step, its keys split
/// 3 ways. The queries' rope parts are zero, and the scale a power of two, so that the queries and
/// cache rows given, already f16, reach the matrix cores unrounded.
const LATENT: Mla = Mla {
    n_head: 2,
    kv_lora: 512,
    q_nope: 64,
    v_dim: 128,
    rope: Rope {
        n_rot: 64,
        freq_base: 10000.0,
        freq_scale: 1.0,
        neox: false,
        yarn: None,
        sections: None,
    },
    scale: 0.125,
    cache: KvType::F16,
};
const LATENT_TOKENS: u32 = 40;
const LATENT_SPLITS: u32 = 3;

/// As `matrix_attention_works`, for Multi-head Latent Attention's chunk and split step at
/// DeepSeek-V2's widths.
pub async fn matrix_latent_attention_works(gpu: &Gpu) -> Result<bool, crate::Error> {
    let m = LATENT;
    let on_cores = |splits, tokens| -> Vec<AttentionForm> {
        let shape = mla::attention_shape(&m, tokens, splits);
        (shape.candidates(gpu.offers(), gpu.adapter()).into_iter())
            .filter(|f| f.rounding().is_some())
            .collect()
    };
    let (chunk_forms, split_forms) = (
        on_cores(None, LATENT_TOKENS),
        on_cores(Some(LATENT_SPLITS), 1),
    );
    if chunk_forms.is_empty() && split_forms.is_empty() {
        return Ok(true);
    }
    let (n, heads, l) = (
        LATENT_TOKENS as usize,
        m.n_head as usize,
        m.kv_lora as usize,
    );
    let width = m.cache_width() as usize;
    let wave = |i: usize| half::f16::from_f32((i as f32 * 0.618).sin()).to_f32();
    let q_latent: Vec<f32> = (0..n * heads * l).map(wave).collect();
    let cache: Vec<f32> = (0..n * width).map(|i| wave(i + 17)).collect();
    // Each row's query: its latent part times the scale (a power of two: exact), a zero rope part.
    let zero_rope = std::iter::repeat_n(0.0, m.rope.n_rot as usize);
    let queries: Vec<f32> = (q_latent.chunks(l))
        .flat_map(|q| (q.iter().map(|v| v * m.scale)).chain(zero_rope.clone()))
        .collect();
    let want = mla::reference_absorbed(&m, &queries, &cache, 0);
    let cache = storage_buffer(gpu, "latent check cache", &f16_words(&cache));
    let freqs = m.rope.freqs_buffer(gpu, None);

    // The chunk, then its last token as a step.
    let runs = [(0, LATENT_TOKENS, None), (n - 1, 1, Some(LATENT_SPLITS))];
    for (first, tokens, splits) in runs {
        let rows = first * heads * l..(first + tokens as usize) * heads * l;
        let q_latent = &q_latent[rows.clone()];
        let q_latent = storage_buffer(gpu, "latent check q_latent", bytemuck::cast_slice(q_latent));
        let q = vec![0f32; tokens as usize * heads * m.q_stride() as usize];
        let q = storage_buffer(gpu, "latent check q", bytemuck::cast_slice(&q));
        let out = scratch_buffer(gpu, "latent check out", rows.len() as u64 * 4).await?;
        let buffers = mla::AttentionBuffers {
            q_latent: &q_latent,
            q: &q,
            cache: &cache,
            freqs: &freqs,
            out: &out,
        };
        let step = StepInput::with(gpu, first as u32, &vec![0; tokens as usize]);
        let mut plan = Plan::new(gpu, &step, tokens);
        let shape = mla::attention_shape(&m, tokens, splits);
        let default = shape.default_form(gpu.adapter());
        let forms = match splits {
            None => {
                mla::push_chunk_in(&mut plan, &m, &buffers, default);
                &chunk_forms
            }
            Some(n_split) => {
                let bytes = attention::split_scratch_bytes(tokens, m.n_head, m.kv_lora, n_split);
                let parts = scratch_buffer(gpu, "latent check parts", bytes).await?;
                mla::push_split_in(&mut plan, &m, &buffers, (n_split, &parts), default);
                &split_forms
            }
        };
        plan.finish(gpu).await?;
        for &form in forms {
            let mut tuning = Tuning::default();
            tuning.insert(&Tunable::Attention(shape), Choice::Attention(form));
            let ran = plan
                .run_checked(gpu, &tuning, "the matrix-core latent attention check")
                .await;
            if ran.is_err() {
                return Ok(false);
            }
            let got = read_back_f32(gpu, &out, rows.len()).await?;
            if nmse(&got, &want[rows.clone()]) > CHECK_NMSE {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// The bytes of `values` in an f16 cache.
fn f16_words(values: &[f32]) -> Vec<u8> {
    let halves: Vec<u16> = (values.iter())
        .map(|&v| half::f16::from_f32(v).to_bits())
        .collect();
    bytemuck::cast_slice(&halves).to_vec()
}

fn nmse(got: &[f32], want: &[f32]) -> f64 {
    let err: f64 = (got.iter().zip(want))
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum();
    let norm: f64 = want.iter().map(|&b| (b as f64).powi(2)).sum();
    // A NaN fails as any error over the bound does.
    match err / norm.max(1e-30) {
        e if e.is_nan() => f64::INFINITY,
        e => e,
    }
}

//! Whether a prompt's attention on the matrix cores (shaders/attention_coop.wgsl) builds on this
//! device and gives the right numbers, in every form the tuner would offer: as with the products on
//! them (`ops::matvec::matrix_cores_work`), a driver's first use of cooperative matrices is where a
//! compiler may fail or err, and a wrong form that is fast would win the tuning.

use super::attention::{self, AttentionBuffers, Shape};
use crate::gpu::{read_back_f32, scratch_buffer, storage_buffer, Gpu, KvType, Plan, StepInput};
use crate::gpu::{AttentionShape, Choice, Tunable, Tuning};

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
    };
    let bytes = gpu.limits.max_compute_workgroup_storage_size;
    let forms: Vec<_> = (shape.candidates(gpu.offers(), bytes).into_iter())
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
    let f16_words = |values: &[f32]| -> Vec<u8> {
        let halves: Vec<u16> = (values.iter())
            .map(|&v| half::f16::from_f32(v).to_bits())
            .collect();
        bytemuck::cast_slice(&halves).to_vec()
    };
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

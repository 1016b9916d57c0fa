//! What the attention tests share: the CPU's grouped-query attention over a cache, and caches of
//! either type made and read back.

use super::f32_buffer;
use pollster::FutureExt as _;
use wick::gpu::{read_back_f32, Gpu, KvType};
use wick::ops::attention;

/// The CPU's grouped-query attention of one token's heads `q` (n_head * head_dim) over positions
/// first..n of the caches (n_ctx, n_kv_head, head_dim), scoring by `scale`, with each head's sink.
pub fn attention_reference_from(
    q: &[f32],
    (k_cache, v_cache): (&[f32], &[f32]),
    (first, n): (usize, usize),
    (n_head, n_kv_head, head_dim): (usize, usize, usize),
    scoring: (f32, f32),
    sinks: Option<&[f32]>,
) -> Vec<f32> {
    let kv_dim = n_kv_head * head_dim;
    (0..n_head)
        .flat_map(|h| {
            let g = h / (n_head / n_kv_head);
            let head_rows = |c: &[f32]| -> Vec<f32> {
                (first..n)
                    .flat_map(|p| {
                        c[p * kv_dim + g * head_dim..p * kv_dim + (g + 1) * head_dim].to_vec()
                    })
                    .collect()
            };
            let qh = &q[h * head_dim..(h + 1) * head_dim];
            let (k, v) = (head_rows(k_cache), head_rows(v_cache));
            let sink = sinks.map(|s| s[h]);
            attention::reference_with_sink(qh, &k, &v, head_dim, scoring, sink)
        })
        .collect()
}

/// `values` as a cache of `cache_type` holds them: rounded to f16 where it is one.
pub fn stored(values: &[f32], cache_type: KvType) -> Vec<f32> {
    match cache_type {
        KvType::F32 => values.to_vec(),
        KvType::F16 => (values.iter())
            .map(|&v| half::f16::from_f32(v).to_f32())
            .collect(),
    }
}

/// A cache of `cache_type` holding `values`.
pub fn cache_buffer(gpu: &Gpu, values: &[f32], cache_type: KvType) -> wgpu::Buffer {
    match cache_type {
        KvType::F32 => f32_buffer(gpu, values),
        KvType::F16 => {
            let halves: Vec<half::f16> = values.iter().map(|&v| half::f16::from_f32(v)).collect();
            wick::gpu::storage_buffer(gpu, "cache", bytemuck::cast_slice(&halves))
        }
    }
}

/// The first `n` values of a cache of `cache_type`.
pub fn read_cache(gpu: &Gpu, buffer: &wgpu::Buffer, n: usize, cache_type: KvType) -> Vec<f32> {
    match cache_type {
        KvType::F32 => read_back_f32(gpu, buffer, n).block_on().unwrap(),
        KvType::F16 => {
            let words = read_back_f32(gpu, buffer, n / 2).block_on().unwrap();
            let halves: &[half::f16] = bytemuck::cast_slice(&words);
            halves.iter().map(|h| h.to_f32()).collect()
        }
    }
}

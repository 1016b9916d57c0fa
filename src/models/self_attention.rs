//! The dense block's attention layer: q, k and v projected from the normed residual stream (biased,
//! or RMS-normed per head), rotated, k and v into the layer's KV cache, attention over it, and where
//! the family gates it, q's gate. Heads may have sinks, and the output projection a bias, where the
//! file has them (gpt-oss). Its weights are named as llama.cpp's files name them; their rows are
//! reordered at load where the kernels want another order (NeoX pairs, the gate beside q).

use super::family::{Config, Family, LayerAttention};
use super::Loader;
use crate::gpu::{scratch_buffer, GpuTensor, KvType, Plan, Stacked};
use crate::ops::head_norm_rope_kv::KvWrite;
use crate::ops::matvec::Input;
use crate::ops::{attention, head_norm_rope_kv, matvec, rope, rope_kv, sigmoid_gate};
use crate::Error;

/// The activations attention works through, one row per token: q rotated; q, k and v as projected,
/// before their per-head norms (and the output gate's values), where the layer norms heads or gates;
/// and the output.
pub struct Rows<'a> {
    pub q: &'a wgpu::Buffer,
    pub qkv: Option<&'a wgpu::Buffer>,
    pub out: &'a wgpu::Buffer,
}

/// One attention layer's weights, and the cache it reads.
pub struct SelfAttention {
    /// attn_q, attn_k, attn_v: ((n_head + 2 n_kv_head) head_dim, n_embd); with an output gate, q's
    /// rows are followed by the gate's: ((2 n_head + 2 n_kv_head) head_dim, n_embd). A layer that
    /// reads another's cache has only q's (and the gate's) rows.
    attn_qkv: Stacked,
    attn_qkv_bias: Option<wgpu::Buffer>, // attn_q.bias, attn_k.bias, attn_v.bias: (n_head + 2 n_kv_head) head_dim
    /// attn_q_norm, attn_k_norm: (2, head_dim); with v normed too, a row of ones after them.
    attn_qkv_norm: Option<wgpu::Buffer>,
    pub attn_output: GpuTensor, // (n_embd, n_head * head_dim)
    /// attn_output.bias (n_embd), added after attn_output (gpt-oss).
    pub attn_output_bias: Option<wgpu::Buffer>,
    /// attn_sinks (n_head): each head's sink logit in the softmax (gpt-oss).
    sinks: Option<wgpu::Buffer>,
    rope_freqs: wgpu::Buffer, // (n_rot / 2) each rope pair's frequency in this layer
    /// (n_ctx, n_kv_head, head_dim) each: this layer's, or the ones of the layer it reads.
    pub cache: KvCache,
    /// What the projection makes besides q, and so what this layer writes to the cache.
    kv: KvWrite,
}

/// A KV cache: buffers cloned from it are the same memory, which is how a layer shares another's.
#[derive(Clone)]
pub struct KvCache {
    pub k: wgpu::Buffer,
    pub v: wgpu::Buffer,
    pub cache_type: KvType,
}

/// How a plan's attention runs.
pub enum Attention<'a> {
    /// A workgroup per head and token in a step's run (`Plan::is_step`); in a prompt's chunk, a
    /// workgroup per head and a block of tokens over tiles of keys (`attention::push_chunk`).
    Whole,
    /// Each of a step's tokens (`Plan::is_step`), split over its keys into `attention::splits`,
    /// through this scratch.
    Split(&'a wgpu::Buffer),
}

/// Checks that the kernels take a layer's heads, naming what they do not.
pub fn check(layer: &LayerAttention) -> Result<(), Error> {
    let hd = layer.head_dim;
    if !hd.is_multiple_of(4) || hd > attention::MAX_HEAD_DIM {
        return Err(Error::Model(format!(
            "heads of {hd} dimensions are not supported (a multiple of 4, at most {})",
            attention::MAX_HEAD_DIM
        )));
    }
    if !layer.rope.n_rot.is_multiple_of(2) || layer.rope.n_rot > hd {
        return Err(Error::Model(format!(
            "RoPE over {} of {hd} dimensions is not supported",
            layer.rope.n_rot
        )));
    }
    Ok(())
}

/// Where each of `n_heads` heads' rows goes when NeoX pairs are put side by side (None: as they are).
fn heads_order(f: &Family, layer: &LayerAttention, n_heads: u32) -> Option<Vec<u32>> {
    let hd = layer.head_dim;
    f.rope_neox.then(|| {
        let o = rope::neox_as_adjacent(hd, layer.rope.n_rot);
        (0..n_heads)
            .flat_map(|h| o.iter().map(move |&r| h * hd + r))
            .collect()
    })
}

impl SelfAttention {
    /// Layer `i`'s weights (its heads already passed `check`), with `freqs` its rotation, and its own
    /// cache for `n_ctx` positions, or `shared`, the cache of the layer it reads.
    pub async fn load(
        l: &mut Loader<'_>,
        i: u32,
        (c, f, layer): (&Config, &Family, &LayerAttention),
        rope_freqs: wgpu::Buffer,
        (n_ctx, shared): (u32, Option<KvCache>),
    ) -> Result<SelfAttention, Error> {
        let gpu = l.gpu.clone();
        let name = |t: &str| format!("blk.{i}.{t}.weight");
        let (d, hd) = (c.n_embd, layer.head_dim);
        let (q_dim, kv_dim) = (c.n_head * hd, layer.n_kv_head * hd);
        let head_order = f
            .rope_neox
            .then(|| rope::neox_as_adjacent(hd, layer.rope.n_rot));
        let (q_order, k_order) = (
            heads_order(f, layer, c.n_head),
            heads_order(f, layer, layer.n_kv_head),
        );
        // With an output gate, attn_q's rows are each head's q then its gate: q's rows of every head
        // (ordered as above) come first, then every head's gate, then k and v: a row [q | gate | k | v],
        // which head_norm_rope_kv and sigmoid_gate read.
        let (q_rows, q_gated_order) = match f.attn_gate {
            false => (q_dim, None),
            true => {
                let own = |h: u32, r: u32| h * 2 * hd + r;
                let q = (0..q_dim).map(|r| match &q_order {
                    Some(o) => own(o[r as usize] / hd, o[r as usize] % hd),
                    None => own(r / hd, r % hd),
                });
                let gates = (0..q_dim).map(|r| own(r / hd, hd + r % hd));
                (2 * q_dim, Some(q.chain(gates).collect::<Vec<u32>>()))
            }
        };
        let q_ordered = q_gated_order.as_ref().or(q_order.as_ref());
        let kv = match (shared.is_some(), f.v_norm) {
            (true, _) => KvWrite::None,
            (false, true) => KvWrite::KvNormed,
            (false, false) => KvWrite::Kv,
        };
        let fused = l.has(&name("attn_qkv"));
        let attn_qkv = match (fused, kv) {
            (true, KvWrite::None) => {
                return Err(Error::Model(format!(
                    "layer {i} reads another layer's cache but has q, k and v in one matrix: not supported"
                )))
            }
            // q, k and v in one matrix (Phi-3): one order over all its rows.
            (true, _) => {
                let order: Option<Vec<u32>> =
                    q_order.as_ref().zip(k_order.as_ref()).map(|(q, k)| {
                        let (k, v) = (
                            k.iter().map(|r| r + q_dim),
                            q_dim + kv_dim..q_dim + 2 * kv_dim,
                        );
                        q.iter().copied().chain(k).chain(v).collect()
                    });
                let rows = q_dim + 2 * kv_dim;
                l.stacked_reordered(&[name("attn_qkv")], d, &[rows], &[order.as_deref()])
                    .await?
            }
            (false, KvWrite::None) => {
                l.stacked_reordered(
                    &[name("attn_q")],
                    d,
                    &[q_rows],
                    &[q_ordered.map(|o| o.as_slice())],
                )
                .await?
            }
            (false, _) => {
                let names = ["attn_q", "attn_k", "attn_v"].map(&name);
                l.stacked_reordered(
                    &names,
                    d,
                    &[q_rows, kv_dim, kv_dim],
                    &[q_ordered.map(|o| o.as_slice()), k_order.as_deref(), None],
                )
                .await?
            }
        };
        let reorder = |v: Vec<f32>, order: &Option<Vec<u32>>| match order {
            None => v,
            Some(o) => o.iter().map(|&r| v[r as usize]).collect(),
        };
        let attn_qkv_bias = match l.has(&format!("blk.{i}.attn_q.bias")) {
            false => None,
            true => {
                if kv == KvWrite::None {
                    return Err(Error::Model(format!(
                        "layer {i} reads another layer's cache but has q/k/v biases: not supported"
                    )));
                }
                let names = ["attn_q", "attn_k", "attn_v"].map(|t| format!("blk.{i}.{t}.bias"));
                let shapes = [[q_dim], [kv_dim], [kv_dim]];
                let tensors: Vec<(&str, &[u32])> = names
                    .iter()
                    .zip(&shapes)
                    .map(|(n, s)| (n.as_str(), &s[..]))
                    .collect();
                let orders = [q_order.clone(), k_order.clone(), None];
                let len = (q_dim + 2 * kv_dim) as usize;
                Some(
                    l.floats("attn_qkv.bias", &tensors, len, move |read| {
                        read.into_iter()
                            .zip(&orders)
                            .flat_map(|(v, order)| reorder(v, order))
                            .collect()
                    })
                    .await?,
                )
            }
        };
        let attn_qkv_norm = match f.qk_norm {
            false => None,
            true => {
                let normed: &[&str] = match kv {
                    KvWrite::None => &["attn_q_norm"],
                    _ => &["attn_q_norm", "attn_k_norm"],
                };
                let names: Vec<String> = normed.iter().map(|t| name(t)).collect();
                let shape = [hd];
                let tensors: Vec<(&str, &[u32])> =
                    names.iter().map(|n| (n.as_str(), &shape[..])).collect();
                // Normed values take unit gains after q's and k's.
                let ones = match kv == KvWrite::KvNormed {
                    true => hd as usize,
                    false => 0,
                };
                let len = names.len() * hd as usize + ones;
                let head_order = head_order.clone();
                Some(
                    l.floats("attn_qkv_norm", &tensors, len, move |read| {
                        let gains = read.into_iter().flat_map(|w| reorder(w, &head_order));
                        gains.chain(std::iter::repeat_n(1.0, ones)).collect()
                    })
                    .await?,
                )
            }
        };
        if attn_qkv_bias.is_some() && attn_qkv_norm.is_some() {
            return Err(Error::Model(
                "q/k/v biases together with per-head q/k norms are not supported".into(),
            ));
        }
        if (f.attn_gate || f.v_norm || kv == KvWrite::None) && attn_qkv_norm.is_none() {
            return Err(Error::Model(
                "gated attention, normed values and shared caches need per-head q/k norms".into(),
            ));
        }
        let cache = match shared {
            Some(cache) => cache,
            None => {
                let cache_type = l.kv_cache;
                let bytes = n_ctx as u64 * kv_dim as u64 * cache_type.value_bytes();
                KvCache {
                    k: scratch_buffer(&gpu, &format!("blk.{i}.k_cache"), bytes).await?,
                    v: scratch_buffer(&gpu, &format!("blk.{i}.v_cache"), bytes).await?,
                    cache_type,
                }
            }
        };
        let output_bias = format!("blk.{i}.attn_output.bias");
        let attn_output_bias = match l.has(&output_bias) {
            true => Some(l.vector(&output_bias, d).await?),
            false => None,
        };
        let sinks = match l.has(&name("attn_sinks")) {
            true => Some(l.vector(&name("attn_sinks"), c.n_head).await?),
            false => None,
        };
        Ok(SelfAttention {
            attn_qkv,
            attn_qkv_bias,
            attn_qkv_norm,
            attn_output: l.matrix(&name("attn_output"), q_dim, d).await?,
            attn_output_bias,
            sinks,
            rope_freqs,
            cache,
            kv,
        })
    }

    /// Values of the projection's row per token: q (and its gate), then k and v where it makes them.
    pub fn row_len(&self) -> u32 {
        self.attn_qkv.rows
    }

    /// q, k and v from x (the layer's normed input, `Input`), rotated, k and v into the cache, then
    /// attention into `attn`, gated where the family gates it.
    pub fn push(
        &self,
        plan: &mut Plan,
        (c, f, layer): (&Config, &Family, &LayerAttention),
        (x, a): (Input, Rows),
        attention: &Attention,
    ) {
        let heads = rope_kv::Heads {
            n_head: c.n_head,
            n_kv_head: layer.n_kv_head,
            head_dim: layer.head_dim,
        };
        let outputs = rope_kv::RopeBuffers {
            q: a.q,
            k_cache: &self.cache.k,
            v_cache: &self.cache.v,
            cache_type: self.cache.cache_type,
            freqs: &self.rope_freqs,
        };
        match (&self.attn_qkv_norm, a.qkv) {
            (Some(norms), Some(qkv)) => {
                matvec::push_stacked(plan, &self.attn_qkv, x, qkv);
                let rope = (&layer.rope, c.rms_eps);
                let row = (qkv, f.attn_gate, self.kv);
                head_norm_rope_kv::push(plan, row, norms, rope, heads, &outputs);
            }
            _ => {
                let qkv = (&self.attn_qkv, self.attn_qkv_bias.as_ref());
                rope_kv::push(plan, qkv, x, &layer.rope, heads, &outputs);
            }
        }
        let shape = attention::Shape {
            n_head: c.n_head,
            n_kv_head: layer.n_kv_head,
            head_dim: layer.head_dim,
            scale: f.attn_scale,
            window: layer.window,
            softcap: f.attn_softcap,
            causal: f.causal,
            // Ids past the vocabulary are rows given in place of embeddings (`Engine::hold_image`).
            both_ways_from: match layer.images_both_ways {
                true => c.n_vocab,
                false => u32::MAX,
            },
        };
        let buffers = attention::AttentionBuffers {
            q: a.q,
            k_cache: &self.cache.k,
            v_cache: &self.cache.v,
            cache_type: self.cache.cache_type,
            out: a.out,
            sinks: self.sinks.as_ref(),
        };
        match attention {
            Attention::Whole if plan.is_step() => attention::push(plan, shape, &buffers),
            Attention::Whole => attention::push_chunk(plan, shape, &buffers),
            Attention::Split(parts) => {
                let splits = attention::splits(c.n_head, layer.n_kv_head, plan.adapter);
                attention::push_split(plan, shape, splits, &buffers, parts)
            }
        }
        if let (true, Some(qkv)) = (f.attn_gate, a.qkv) {
            let q_dim = c.n_head * layer.head_dim;
            let row_len = self.row_len();
            sigmoid_gate::push(plan, a.out, q_dim, (qkv, row_len, q_dim));
        }
    }
}

//! The gemma4 architecture (Gemma 4 E2B/E4B text models): Gemma 3's block (gemma.rs) with
//! - sliding-window layers (a flag per layer) whose heads have their own size, kv heads and RoPE;
//! - global layers whose RoPE turns only part of each head: "proportional" RoPE, written in the file
//!   as rope_freqs with an infinite divisor for the pairs that stay still;
//! - v RMS-normed per head like q and k (without weights), and no scaling of the scores;
//! - the last `shared_kv_layers` layers reading the KV cache of the last earlier layer of their kind;
//! - per-layer embeddings (per_layer_embd.rs) and a scale on each layer's output;
//! - soft-capped final logits;
//! - an image's tokens seeing its whole span on sliding layers only, and on none in E2B and E4B (as
//!   llama.cpp runs them: their width, 1536 or 2560, is how it tells them).

use super::family::{Config, Family, LayerAttention};
use super::Meta;
use crate::gguf::Value;
use crate::ops::glu::Activation;
use crate::ops::rope::Rope;
use crate::Error;

pub fn family(m: &Meta, c: &Config, _n_ctx: u32) -> Result<Family, Error> {
    if m.meta_u32_or("expert_count", 0)? > 0 || m.has("blk.0.ffn_gate_inp.weight") {
        return Err(Error::Model(
            "Gemma 4's mixture-of-experts models (26B-A4B) are not supported yet: the dense E2B and E4B are"
                .into(),
        ));
    }
    let sliding = sliding_layers(m, c.n_layer)?;
    let window = m.meta_u32("attention.sliding_window")?;
    let head_dim_swa = m.meta_u32_or("attention.key_length_swa", c.head_dim)?;
    if m.meta_u32_or("attention.value_length_swa", head_dim_swa)? != head_dim_swa {
        return Err(Error::Model(
            "sliding layers' values and keys of different lengths are not supported".into(),
        ));
    }
    let local = Rope {
        n_rot: m.meta_u32_or("rope.dimension_count_swa", c.rope.n_rot)?,
        freq_base: m.meta_f32_or("rope.freq_base_swa", c.rope.freq_base)?,
        ..c.rope
    };
    let n_shared = m.meta_u32_or("attention.shared_kv_layers", 0)?;
    let with_kv = c
        .n_layer
        .checked_sub(n_shared)
        .filter(|&n| n >= 2 || n_shared == 0);
    let Some(with_kv) = with_kv else {
        return Err(Error::Model(format!(
            "metadata {}.attention.shared_kv_layers: {n_shared} of {} layers leaves fewer than 2 with a KV cache",
            m.arch, c.n_layer
        )));
    };
    let images_causal = [1536, 2560].contains(&c.n_embd);
    let mut layers = Vec::with_capacity(c.n_layer as usize);
    for (i, &slides) in sliding.iter().enumerate() {
        let mut layer = match slides {
            true => LayerAttention {
                rope: local,
                window,
                head_dim: head_dim_swa,
                rope_factors: false,
                ..LayerAttention::new(c, i)
            },
            false => LayerAttention::new(c, i),
        };
        layer.images_both_ways = slides && !images_causal;
        if i as u32 >= with_kv {
            // As llama.cpp pairs them: the last layer with a cache for the global layers, the one
            // before it for the sliding ones.
            let from = (with_kv - if slides { 2 } else { 1 }) as usize;
            let source: &LayerAttention = &layers[from];
            if source.window != layer.window
                || source.head_dim != layer.head_dim
                || source.n_kv_head != layer.n_kv_head
            {
                return Err(Error::Model(format!(
                    "layer {i} would read the KV cache of layer {from}, whose attention differs (sliding window, head size or kv heads)"
                )));
            }
            layer.kv_from = Some(from);
        }
        layers.push(layer);
    }
    Ok(Family {
        post_norms: true,
        qk_norm: true,
        v_norm: true,
        activation: Activation::GeluTanh,
        rope_neox: true,
        embd_scale: (c.n_embd as f32).sqrt(),
        attn_scale: 1.0,
        final_softcap: m.meta_f32_or("final_logit_softcapping", 0.0)?,
        layers,
        per_layer_width: m.meta_u32_or("embedding_length_per_layer_input", 0)?,
        ..Family::llama(c)
    })
}

/// Which layers slide a window: attention.sliding_window_pattern, one flag per layer.
fn sliding_layers(m: &Meta, n_layer: u32) -> Result<Vec<bool>, Error> {
    let key = format!("{}.attention.sliding_window_pattern", m.arch);
    let flags: Option<Vec<bool>> = match m.header.get(&key) {
        Some(Value::Array(a)) => a.iter().map(Value::as_bool).collect(),
        Some(_) => None,
        None => return Err(Error::Model(format!("metadata {key} is missing"))),
    };
    match flags {
        Some(f) if f.len() == n_layer as usize => Ok(f),
        Some(f) => Err(Error::Model(format!(
            "metadata {key}: {} flags for {n_layer} layers",
            f.len()
        ))),
        None => Err(Error::Model(format!(
            "metadata {key}: not an array of flags"
        ))),
    }
}

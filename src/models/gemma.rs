//! What Gemma 2 and Gemma 3 share: embeddings scaled by sqrt(n_embd), a norm after each sublayer as well
//! as before it, GELU-gated feed-forward, RoPE in NeoX order, local layers that slide a window over the
//! sequence (with a RoPE base of their own), soft-capped final logits where the file says so, and the
//! 27B model's attention scale. Each generation's file (gemma2.rs, gemma3.rs) names what sets it apart
//! and llama.cpp's constants for it where the metadata is silent.

use super::family::{Config, Family, LayerAttention};
use super::Meta;
use crate::gguf::Value;
use crate::ops::glu::Activation;
use crate::ops::rope::Rope;
use crate::Error;

/// One Gemma generation.
pub struct Generation {
    /// q and k are RMS-normed per head (Gemma 3).
    pub qk_norm: bool,
    /// Of every this many layers, all but the last slide a window, unless the metadata says otherwise.
    pub swa_pattern: u32,
    /// The window where the metadata names none (0: no window).
    pub window: u32,
    /// The local layers' RoPE base where the metadata names none (None: the global one), and whether
    /// they keep the global rotation's linear scaling.
    pub local_rope_base: Option<f32>,
    pub local_keeps_scaling: bool,
    /// Soft-capping of attention scores where the metadata names none (0: none).
    pub attn_softcap: f32,
    /// Soft-capping of the final logits where the metadata names none (0: none).
    pub final_softcap: f32,
    /// The layer count of the 27B model, which scales attention by 1 / sqrt(n_embd / n_head) rather
    /// than by 1 / sqrt(head_dim).
    pub layers_27b: u32,
}

pub fn family(m: &Meta, c: &Config, g: &Generation) -> Result<Family, Error> {
    let window = m.meta_u32_or("attention.sliding_window", g.window)?;
    let sliding = sliding_layers(m, c.n_layer, window > 0, g.swa_pattern)?;
    let local = Rope {
        freq_base: m.meta_f32_or(
            "rope.freq_base_swa",
            g.local_rope_base.unwrap_or(c.rope.freq_base),
        )?,
        freq_scale: match g.local_keeps_scaling {
            true => c.rope.freq_scale,
            false => 1.0,
        },
        ..c.rope
    };
    let layers = sliding
        .iter()
        .enumerate()
        .map(|(i, &slides)| match slides {
            true => LayerAttention {
                rope: local,
                window,
                ..LayerAttention::new(c, i)
            },
            false => LayerAttention::new(c, i),
        })
        .collect();
    let attn_scale = match c.n_layer == g.layers_27b {
        true => 1.0 / ((c.n_embd / c.n_head) as f32).sqrt(),
        false => 1.0 / (c.head_dim as f32).sqrt(),
    };
    Ok(Family {
        post_norms: true,
        qk_norm: g.qk_norm,
        activation: Activation::GeluTanh,
        rope_neox: true,
        embd_scale: (c.n_embd as f32).sqrt(),
        attn_scale,
        attn_softcap: match g.attn_softcap {
            0.0 => 0.0,
            cap => m.meta_f32_or("attn_logit_softcapping", cap)?,
        },
        final_softcap: m.meta_f32_or("final_logit_softcapping", g.final_softcap)?,
        rope_factors: None,
        layers,
        ..Family::llama(c)
    })
}

/// Which layers slide a window: the metadata's pattern (a period, or one flag per layer), else
/// `period`; none where the model has no window.
pub(super) fn sliding_layers(
    m: &Meta,
    n_layer: u32,
    windowed: bool,
    period: u32,
) -> Result<Vec<bool>, Error> {
    let key = "attention.sliding_window_pattern";
    if !windowed {
        return Ok(vec![false; n_layer as usize]);
    }
    if let Some(Value::Array(flags)) = m.header.get(&format!("{}.{key}", m.arch)) {
        let flags: Option<Vec<bool>> = flags.iter().map(Value::as_bool).collect();
        return match flags {
            Some(f) if f.len() == n_layer as usize => Ok(f),
            _ => Err(Error::Model(format!(
                "metadata {}.{key}: not one flag per layer",
                m.arch
            ))),
        };
    }
    let period = m.meta_u32_or(key, period)?;
    Ok((0..n_layer)
        .map(|i| period == 0 || i % period < period - 1)
        .collect())
}

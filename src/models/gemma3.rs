//! The gemma3 architecture (Gemma 3 text models): embeddings scaled by sqrt(n_embd), a norm after each
//! sublayer as well as before it, q and k normed per head, GELU-gated feed-forward, RoPE in NeoX order,
//! and local layers that slide a window over the sequence with a RoPE base of their own. Where the
//! metadata is silent, llama.cpp's constants for the family: five local layers to one global, local
//! RoPE base 10000.

use super::dense::{Config, Family, LayerAttention};
use super::Meta;
use crate::gguf::Value;
use crate::ops::glu::Activation;
use crate::ops::rope::Rope;
use crate::Error;

/// Of every `SWA_PATTERN` layers, all but the last slide a window.
const SWA_PATTERN: u32 = 6;
const LOCAL_ROPE_BASE: f32 = 10000.0;
/// Gemma 3 27B (62 layers) scales attention by 1 / sqrt(n_embd / n_head) rather than by head_dim.
const LAYERS_27B: u32 = 62;

pub fn family(m: &Meta, c: &Config) -> Result<Family, Error> {
    if m.meta_f32_or("final_logit_softcapping", 0.0)? != 0.0 {
        return Err(Error::Model(
            "gemma3 with final logit soft-capping is not supported yet".into(),
        ));
    }
    let window = m.meta_u32_or("attention.sliding_window", 0)?;
    let sliding = sliding_layers(m, c.n_layer, window > 0)?;
    let local = Rope {
        freq_base: m.meta_f32_or("rope.freq_base_swa", LOCAL_ROPE_BASE)?,
        freq_scale: 1.0,
        ..c.rope
    };
    let layers = sliding
        .iter()
        .map(|&slides| match slides {
            true => LayerAttention {
                rope: local,
                window,
            },
            false => LayerAttention {
                rope: c.rope,
                window: 0,
            },
        })
        .collect();
    let attn_scale = match c.n_layer {
        LAYERS_27B => 1.0 / ((c.n_embd / c.n_head) as f32).sqrt(),
        _ => 1.0 / (c.head_dim as f32).sqrt(),
    };
    Ok(Family {
        post_norms: true,
        qk_norm: true,
        activation: Activation::GeluTanh,
        rope_neox: true,
        embd_scale: (c.n_embd as f32).sqrt(),
        attn_scale,
        layers,
    })
}

/// Which layers slide a window: the metadata's pattern (a period, or one flag per layer), else
/// `SWA_PATTERN`; none where the model has no window.
fn sliding_layers(m: &Meta, n_layer: u32, windowed: bool) -> Result<Vec<bool>, Error> {
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
    let period = m.meta_u32_or(key, SWA_PATTERN)?;
    Ok((0..n_layer)
        .map(|i| period == 0 || i % period < period - 1)
        .collect())
}

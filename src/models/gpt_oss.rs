//! The gpt-oss architecture (gpt-oss-20b, gpt-oss-120b): llama's pre-norm block with biased q, k, v
//! and output projections, a learned sink logit per head in the attention's softmax, a sliding window
//! on alternate layers (the even ones, unless the metadata says otherwise), RoPE in NeoX order with
//! YaRN, and a mixture of experts in every layer: a biased router whose chosen experts' logits are
//! softmaxed among themselves (which is the softmax over all, renormalized), biased gate, up and down
//! per expert, and a clamped SwiGLU. The norm before the experts is named post_attention_norm. The
//! biases and sinks are read where the file has them (self_attention.rs, feed_forward.rs).

use super::family::{Config, Family, LayerAttention};
use super::feed_forward::{MoeConfig, Weighing};
use super::gemma::sliding_layers;
use super::Meta;
use crate::ops::glu::Activation;
use crate::Error;

pub fn family(m: &Meta, c: &Config, _n_ctx: u32) -> Result<Family, Error> {
    let window = m.meta_u32("attention.sliding_window")?;
    let sliding = sliding_layers(m, c.n_layer, window > 0, 2)?;
    let local_base = m.meta_f32_or("rope.freq_base_swa", c.rope.freq_base)?;
    let layers = sliding
        .iter()
        .enumerate()
        .map(|(i, &slides)| {
            let layer = LayerAttention::new(c, i);
            match slides {
                true => LayerAttention {
                    window,
                    rope: crate::ops::rope::Rope {
                        freq_base: local_base,
                        ..layer.rope
                    },
                    ..layer
                },
                false => layer,
            }
        })
        .collect();
    let n_ff = c.n_ff.iter().copied().max().unwrap_or(0);
    Ok(Family {
        activation: Activation::SwigluOai,
        rope_neox: true,
        layers,
        ffn_norm: "post_attention_norm",
        moe: Some(MoeConfig::from_meta(m, Weighing::SoftmaxNormalized, n_ff)?),
        ..Family::llama(c)
    })
}

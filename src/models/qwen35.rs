//! The qwen35 architecture (Qwen3.5 dense models): of every `full_attention_interval` layers, all but
//! the last are Gated DeltaNet linear attention (models/linear_attention.rs) and the last is gated
//! attention: q and k RMS-normed per head, RoPE in NeoX order on the first rope.dimension_count
//! dimensions of each head, and the attention's output scaled by the sigmoid of a gate that attn_q
//! computes beside q. The norm before the feed-forward block is named post_attention_norm. Files may
//! carry next-token-prediction layers after the model's own (nextn_predict_layers): they are loaded by
//! nobody and not run.
//!
//! Qwen3.5 rotates with interleaved multimodal RoPE (rope.dimension_sections). Text tokens give each of
//! its first three sections the token's position and the fourth position 0, so it is NeoX RoPE over
//! the pairs of the first three (with Qwen3.5's sections, every pair) and no rotation of the others.
//! An image's tokens (Qwen3.5's vision projector, vision/qwen3vl.rs) share one position, turned
//! further by their row on the second axis and their column on the third, and see one another
//! causally, as text does.

use super::family::{Config, Family, Mixer};
use super::Meta;
use crate::gguf::Value;
use crate::ops::delta_net;
use crate::Error;

pub fn family(m: &Meta, c: &Config, _n_ctx: u32) -> Result<Family, Error> {
    let shape = delta_net::Shape {
        n_k_heads: m.meta_u32("ssm.group_count")?,
        n_v_heads: m.meta_u32("ssm.time_step_rank")?,
        dim: m.meta_u32("ssm.state_size")?,
        conv_kernel: m.meta_u32("ssm.conv_kernel")?,
    };
    let inner = m.meta_u32("ssm.inner_size")?;
    if inner != shape.value_dim() {
        return Err(Error::Model(format!(
            "metadata {}.ssm.inner_size is {inner}, but {} value heads of {} make {}",
            m.arch,
            shape.n_v_heads,
            shape.dim,
            shape.value_dim()
        )));
    }
    let sections = sections(m)?;
    let mut f = Family {
        rope_still_pairs: sections.map_or(Vec::new(), |s| still_pairs(s, c.rope.n_rot)),
        qk_norm: true,
        rope_neox: true,
        ffn_norm: "post_attention_norm",
        attn_gate: true,
        delta_net: Some(shape),
        ..Family::llama(c)
    };
    for (layer, recurrent) in f.layers.iter_mut().zip(recurrent_layers(m, c.n_layer)?) {
        if recurrent {
            layer.mixer = Mixer::DeltaNet;
        }
        layer.rope.sections = sections;
        layer.images_both_ways = false;
    }
    Ok(f)
}

/// Which layers are linear attention: attention.recurrent_layers (a flag per block) where the file
/// has it, else all but the last of every full_attention_interval layers (llama.cpp's default: 4).
fn recurrent_layers(m: &Meta, n_layer: u32) -> Result<Vec<bool>, Error> {
    let key = format!("{}.attention.recurrent_layers", m.arch);
    if let Some(v) = m.header.get(&key) {
        let flags: Option<Vec<bool>> = match v {
            Value::Array(a) => a.iter().map(Value::as_bool).collect(),
            _ => None,
        };
        return match flags {
            // The flags cover next-token-prediction layers too, which are not recurrent.
            Some(f) if f.len() >= n_layer as usize => Ok(f[..n_layer as usize].to_vec()),
            _ => Err(Error::Model(format!(
                "metadata {key}: not one flag per layer"
            ))),
        };
    }
    let interval = m.meta_u32_or("full_attention_interval", 4)?;
    if interval == 0 || !n_layer.is_multiple_of(interval) {
        return Err(Error::Model(format!(
            "metadata {}.full_attention_interval: {interval} does not divide the {n_layer} layers",
            m.arch
        )));
    }
    Ok((0..n_layer).map(|i| (i + 1) % interval != 0).collect())
}

/// rope.dimension_sections: interleaved multimodal RoPE's pairs on each of its four axes, where
/// the file has them.
fn sections(m: &Meta) -> Result<Option<[u32; 4]>, Error> {
    let key = format!("{}.rope.dimension_sections", m.arch);
    match m.header.get(&key) {
        None => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_u64().filter(|&n| n < 256).map(|n| n as u32))
            .collect::<Option<Vec<u32>>>()
            .and_then(|s| <[u32; 4]>::try_from(s).ok())
            .filter(|s| s.iter().sum::<u32>() > 0)
            .map(Some)
            .ok_or_else(|| Error::Model(format!("metadata {key}: not 4 counts below 256"))),
        Some(_) => Err(Error::Model(format!("metadata {key}: not an array"))),
    }
}

/// The pairs the fourth of the `sections` turns, by position 0 for text tokens: interleaved
/// multimodal RoPE gives pair p the section of p mod the sections' sum, taken in turn (t, h, w, t, ...)
/// while each has pairs left, and the fourth after. The pairs' frequencies go on as in plain RoPE.
fn still_pairs(sections: [u32; 4], n_rot: u32) -> Vec<bool> {
    let total: u32 = sections.iter().sum();
    let text = |p: u32| {
        let sector = p % total;
        (0..3).any(|s| sector % 3 == s && sector < 3 * sections[s as usize])
    };
    (0..n_rot / 2).map(|p| !text(p)).collect()
}

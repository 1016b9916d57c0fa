//! The phi3 architecture (Phi-3 and Phi-3.5 mini/medium, Phi-4 mini): llama's block with q, k and v in
//! one matrix (attn_qkv) and gate and up in one (ffn_up, gate first), which the dense block loads as it
//! loads them apart; RoPE in NeoX order. Files for long contexts carry LongRoPE's two sets of per-pair
//! frequency divisors: as llama.cpp does, rope_factors_long where the context runs past the original
//! training context (rope.scaling.original_context_length), rope_factors_short otherwise, and
//! rope.scaling.attn_factor scaling the rotation's magnitude.
//!
//! llama.cpp runs every phi3 layer over the whole context, sliding window or not (its files' windows
//! are disabled there), and so does Wick.

use super::family::{Config, Family};
use super::Meta;
use crate::ops::rope::{Rope, Yarn};
use crate::Error;

pub fn family(m: &Meta, c: &Config, n_ctx: u32) -> Result<Family, Error> {
    let mut f = Family {
        rope_neox: true,
        ..Family::llama(c)
    };
    if m.has("rope_factors_long.weight") {
        let original = m.meta_u32_or("rope.scaling.original_context_length", c.n_ctx_train)?;
        f.rope_factors = Some(match n_ctx > original {
            true => "rope_factors_long.weight".into(),
            false => "rope_factors_short.weight".into(),
        });
        let attn_factor = m.meta_f32_or("rope.scaling.attn_factor", 1.0)?;
        // The magnitude alone: no YaRN ramp (ext_factor 0).
        let rope = Rope {
            yarn: Some(Yarn {
                ext_factor: 0.0,
                attn_factor,
                corr_low: 0.0,
                corr_high: 0.0,
            }),
            ..c.rope
        };
        for layer in &mut f.layers {
            layer.rope = rope;
        }
    }
    Ok(f)
}

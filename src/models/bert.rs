//! The BERT encoders: `bert` (BERT, bge, MiniLM, all-MiniLM) and `nomic-bert` (nomic-embed-text), as
//! llama.cpp runs them. Attention sees the whole input both ways; LayerNorms with biases norm the
//! residual stream itself after each residual add (`Family::layer_norms`), starting from the
//! embeddings plus token type 0's row. bert adds learned absolute positions and runs biased q, k, v
//! and output projections and an ungated GELU feed-forward with biases; nomic-bert turns q and k by
//! NeoX RoPE instead, from one attn_qkv, with a SwiGLU feed-forward and no biases.

use super::family::{Config, Family};
use super::Meta;
use crate::ops::glu::Activation;
use crate::ops::rope::Rope;
use crate::Error;

pub fn family(m: &Meta, c: &Config, _n_ctx: u32) -> Result<Family, Error> {
    let base = Family {
        causal: false,
        layer_norms: true,
        ..Family::llama(c)
    };
    Ok(match m.arch.as_str() {
        "nomic-bert" => Family {
            activation: Activation::Silu,
            rope_neox: true,
            ..base
        },
        // Positions are the table's: no rotation.
        _ => {
            let no_rotation = Rope { n_rot: 0, ..c.rope };
            let layers = base
                .layers
                .iter()
                .map(|l| super::family::LayerAttention {
                    rope: no_rotation,
                    ..*l
                })
                .collect();
            Family {
                activation: Activation::GeluTanh,
                layers,
                ..base
            }
        }
    })
}

//! The gemma3 architecture (Gemma 3 text models): the Gemma block (gemma.rs) with q and k normed per
//! head; five local layers to one global, local RoPE base 10000 without the global's scaling, where
//! the metadata is silent (llama.cpp's constants).

use super::family::{Config, Family};
use super::gemma::{self, Generation};
use super::Meta;
use crate::Error;

pub(super) const GEMMA3: Generation = Generation {
    qk_norm: true,
    swa_pattern: 6,
    window: 0,
    local_rope_base: Some(10000.0),
    local_keeps_scaling: false,
    attn_softcap: 0.0,
    final_softcap: 0.0,
    layers_27b: 62,
};

pub fn family(m: &Meta, c: &Config, _n_ctx: u32) -> Result<Family, Error> {
    gemma::family(m, c, &GEMMA3)
}

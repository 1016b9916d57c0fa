//! The gemma2 architecture (Gemma 2): the Gemma block (gemma.rs) with attention scores soft-capped (50)
//! and the final logits (30), and every other layer sliding a window of 4096 from the first, where the
//! metadata is silent (llama.cpp's constants); local layers rotate as the global ones do.

use super::family::{Config, Family};
use super::gemma::{self, Generation};
use super::Meta;
use crate::Error;

const GEMMA2: Generation = Generation {
    qk_norm: false,
    swa_pattern: 2,
    window: 4096,
    local_rope_base: None,
    local_keeps_scaling: true,
    attn_softcap: 50.0,
    final_softcap: 30.0,
    layers_27b: 46,
};

pub fn family(m: &Meta, c: &Config, _n_ctx: u32) -> Result<Family, Error> {
    gemma::family(m, c, &GEMMA2)
}

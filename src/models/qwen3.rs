//! The qwen3 architecture (Qwen 3 dense models): llama's block with q and k RMS-normed per head before
//! RoPE, RoPE in NeoX order, and no biases. Heads may be wider than n_embd / n_head (key_length).

use super::family::{Config, Family};
use super::Meta;
use crate::Error;

pub fn family(_: &Meta, c: &Config, _n_ctx: u32) -> Result<Family, Error> {
    Ok(Family {
        qk_norm: true,
        rope_neox: true,
        ..Family::llama(c)
    })
}

//! The qwen2 architecture (Qwen 2 and 2.5): llama's block with biases on q, k and v (loaded wherever a
//! file has them) and RoPE in NeoX order.

use super::family::{Config, Family};
use super::Meta;
use crate::Error;

pub fn family(_: &Meta, c: &Config, _n_ctx: u32) -> Result<Family, Error> {
    Ok(Family {
        rope_neox: true,
        ..Family::llama(c)
    })
}

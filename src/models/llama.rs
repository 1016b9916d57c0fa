//! The llama architecture (Llama 2/3, SmolLM2, TinyLlama, Mistral): the dense block as it is, with
//! Llama 3's rope_freqs where the file has them.

use super::family::{Config, Family};
use super::Meta;
use crate::Error;

pub fn family(_: &Meta, c: &Config, _n_ctx: u32) -> Result<Family, Error> {
    Ok(Family::llama(c))
}

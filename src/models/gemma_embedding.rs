//! The gemma-embedding architecture (EmbeddingGemma): Gemma 3's block as an encoder. Attention sees the
//! whole input both ways, a sliding-window layer the keys within half its window on either side; the
//! file names its pooling (mean), and may carry two dense projections applied after it (dense_2,
//! dense_3: `Forward::hidden`'s projections). Its attention is scaled by 1 / sqrt(head_dim) at every
//! size, as llama.cpp's graph does.

use super::family::{Config, Family};
use super::gemma::{self, Generation};
use super::Meta;
use crate::Error;

/// Gemma 3's, but 1 / sqrt(head_dim) at every size: no 27B rule.
const GEMMA_EMBEDDING: Generation = Generation {
    layers_27b: 0,
    ..super::gemma3::GEMMA3
};

pub fn family(m: &Meta, c: &Config, _n_ctx: u32) -> Result<Family, Error> {
    Ok(Family {
        causal: false,
        ..gemma::family(m, c, &GEMMA_EMBEDDING)?
    })
}

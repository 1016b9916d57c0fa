//! The qwen3moe architecture (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B, Qwen3-235B-A22B): Qwen 3's block
//! (qwen3.rs) with a mixture of experts for every feed-forward sublayer: a softmax over the router's
//! logits, the top expert_used_count experts, their probabilities renormalized to sum 1.

use super::family::{Config, Family};
use super::feed_forward::{MoeConfig, Weighing};
use super::Meta;
use crate::Error;

pub fn family(m: &Meta, c: &Config, n_ctx: u32) -> Result<Family, Error> {
    let n_ff = c.n_ff.iter().copied().max().unwrap_or(0);
    Ok(Family {
        moe: Some(MoeConfig::from_meta(m, Weighing::SoftmaxNormalized, n_ff)?),
        ..super::qwen3::family(m, c, n_ctx)?
    })
}

//! The qwen35moe architecture (Qwen3.5-35B-A3B and larger): Qwen3.5's hybrid block (qwen35.rs) with a
//! mixture of experts for every feed-forward sublayer, routed as qwen3moe routes (softmax, top
//! expert_used_count, renormalized), beside a shared expert of expert_shared_feed_forward_length
//! scaled by the sigmoid of its own gate (ffn_gate_inp_shexp).

use super::family::{Config, Family};
use super::feed_forward::{MoeConfig, Weighing};
use super::Meta;
use crate::Error;

pub fn family(m: &Meta, c: &Config, n_ctx: u32) -> Result<Family, Error> {
    let n_ff = c.n_ff.iter().copied().max().unwrap_or(0);
    let moe = MoeConfig {
        shared_gate: true,
        ..MoeConfig::from_meta(m, Weighing::SoftmaxNormalized, n_ff)?
    };
    Ok(Family {
        moe: Some(moe),
        ..super::qwen35::family(m, c, n_ctx)?
    })
}

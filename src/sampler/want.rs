//! What a step reads back for the sampler, and what it read: the sampler says what it needs
//! (`Want`), the engine reads it back after the step (`SequenceStep`).

use super::{Choose, Draw, Pick};

/// What a sequence's step reads back besides the index of its largest logit.
#[derive(Clone)]
pub enum Want {
    /// Nothing more: a greedy request's next token is that index.
    Choice,
    /// The sampler's candidates as `pick` asks (the repetition penalty, then the k largest logits),
    /// with the penalized row's log-sum-exp where asked for: a few hundred bytes, not the row.
    Candidates { pick: Box<Pick>, log_sum_exp: bool },
    /// The row of logits (to sample from all of it, on the CPU).
    Logits,
    /// The token the sampler chooses among the candidates `pick` asks for, as `choose` says
    /// (top-p, min-p, the temperature, the draw): the CPU sampler's choice, made on the GPU.
    Chosen { pick: Box<Pick>, choose: Choose },
    /// A token drawn from the row after the penalty `pick` asks for, as `draw` says (a temperature
    /// above 0, min-p): the sampler's choice made on the GPU.
    Drawn { pick: Box<Pick>, draw: Draw },
    /// As `then` asks, among the tokens `bits` allows (a grammar's next tokens, a bit each: id i is
    /// bit i % 32 of word i / 32), masked on the GPU before the choice or the candidates.
    Allowed { bits: Vec<u32>, then: Box<Want> },
}

/// What a step of several sequences read back for one of them, as its `Want` asked.
#[derive(Clone, Debug)]
pub enum SequenceStep {
    /// The index of the largest logit (the first of equals), or the token the GPU drew, with the
    /// row's softmax at it where the GPU's greedy choice gave it.
    Choice {
        id: u32,
        chance: Option<f32>,
    },
    Candidates(Ranked),
    Logits(Vec<f32>),
}

/// A sampled step's candidates (`SequenceStep::Candidates`).
#[derive(Clone, Debug)]
pub struct Ranked {
    /// (id, logit after the penalty), largest first.
    pub candidates: Vec<(u32, f32)>,
    /// log(sum(exp(logit))) over the penalized row, where asked for: a logit less this is its
    /// token's log-probability.
    pub log_sum_exp: Option<f32>,
}

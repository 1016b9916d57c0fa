//! What runs after a decode step, in its pass, to reduce a row of logits to what the sampler reads
//! back: the greedy choice (the decode plan's argmax), the top-k candidates and the choice among
//! them, or a token drawn from the whole row; and how those bytes are read.

use super::cast;
use crate::gpu::{Gpu, Plan};
use crate::models::Forward;
use crate::ops::draw::{self, Drawn};
use crate::ops::top_k;
use crate::sampler::{Choose, Draw, Pick, Ranked};
use crate::Error;

/// What a decode step reads back.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    Nothing,
    Logits,
    /// The index of the largest logit, computed after the step in the same pass.
    Greedy,
    /// The sampler's k candidates, computed after the step in the same pass, and the penalized
    /// row's log-sum-exp where asked for.
    Candidates {
        k: u32,
        log_sum_exp: bool,
    },
    /// The sampler's choice among its candidates, computed after the step in the same pass.
    Chosen,
    /// A token drawn from the row on the GPU, computed after the step in the same pass.
    Drawn,
}

/// The plans that reduce one row of logits for the sampler, run after a step in its pass, and their
/// buffers: the candidates (and the choice among them), and the draw from the whole row.
pub(super) struct Sample {
    candidates_plan: Plan,
    candidates: top_k::Candidates,
    draw_plan: Plan,
    drawn: Drawn,
}

impl Sample {
    /// For row `row` of `logits` (rows of the vocabulary), with that row of the grammar's mask.
    pub(super) async fn new(
        gpu: &Gpu,
        forward: &Forward,
        logits: &wgpu::Buffer,
        row: u32,
    ) -> Result<Sample, Error> {
        let allowed = (row, &forward.allowed);
        let mut candidates_plan = Plan::new(gpu, &forward.step, 1);
        let candidates =
            top_k::push(&mut candidates_plan, gpu, logits, forward.n_logits, allowed).await?;
        candidates_plan.finish(gpu).await?;
        let mut draw_plan = Plan::new(gpu, &forward.step, 1);
        let drawn = draw::push(&mut draw_plan, gpu, logits, forward.n_logits, allowed).await?;
        draw_plan.finish(gpu).await?;
        Ok(Sample {
            candidates_plan,
            candidates,
            draw_plan,
            drawn,
        })
    }

    /// Writes `pick` where the candidates plan reads it; returns the read that takes its result.
    pub(super) fn write_pick(&self, gpu: &Gpu, pick: &Pick, log_sum_exp: bool) -> Read {
        let k = pick.k();
        assert!(k >= 1, "at least one candidate");
        let pick = bytemuck::bytes_of(pick);
        gpu.queue.write_buffer(&self.candidates.pick, 0, pick);
        Read::Candidates { k, log_sum_exp }
    }

    /// Writes what the choice among the candidates asks: the pick and the choice.
    pub(super) fn write_choose(&self, gpu: &Gpu, pick: &Pick, choose: &Choose) -> Read {
        self.write_pick(gpu, pick, false);
        let choose = bytemuck::bytes_of(choose);
        gpu.queue.write_buffer(&self.candidates.choose, 0, choose);
        Read::Chosen
    }

    /// Writes what a draw from the whole row asks: the penalty and the draw.
    pub(super) fn write_draw(&self, gpu: &Gpu, pick: &Pick, draw: &Draw) -> Read {
        let queue = &gpu.queue;
        queue.write_buffer(&self.drawn.pick, 0, bytemuck::bytes_of(pick));
        queue.write_buffer(&self.drawn.draw, 0, bytemuck::bytes_of(draw));
        Read::Drawn
    }

    /// The span of this sample's result that `read` (candidates, the choice among them, or a draw)
    /// reads back.
    pub(super) fn read_back(&self, read: Read) -> (&wgpu::Buffer, u64, u64) {
        match read {
            Read::Drawn => (&self.drawn.token, 0, 4),
            Read::Chosen => (&self.candidates.result, top_k::CHOSEN_AT, 4),
            _ => (&self.candidates.result, 0, candidate_bytes(read) as u64),
        }
    }

    /// The plan that runs after the step for `read`.
    pub(super) fn plan_for(&self, read: Read) -> &Plan {
        match read {
            Read::Drawn => &self.draw_plan,
            _ => &self.candidates_plan,
        }
    }
}

/// A step's candidates, from the bytes a `Read::Candidates` read back.
pub(crate) fn read_ranked(bytes: &[u8], read: Read) -> Ranked {
    let Read::Candidates { k, log_sum_exp } = read else {
        unreachable!("candidates were read")
    };
    let at = top_k::LOG_SUM_EXP_AT as usize;
    Ranked {
        candidates: top_k::candidates(bytes, k),
        log_sum_exp: log_sum_exp.then(|| cast::<f32>(&bytes[at..at + 4])[0]),
    }
}

/// Bytes a `Read::Candidates` reads back.
pub(crate) fn candidate_bytes(read: Read) -> usize {
    match read {
        Read::Candidates {
            log_sum_exp: true, ..
        } => top_k::LOG_SUM_EXP_AT as usize + 4,
        Read::Candidates { k, .. } => k as usize * 8,
        _ => 0,
    }
}

//! A reply's plain steps a step ahead (`Engine::submit_step`): where the GPU makes each choice
//! alone (`Sampler::chooses_on_gpu`), the step after a token is submitted before that token is read
//! back, so that the GPU goes from step to step without waiting for the CPU.

use super::Session;
use crate::engine::StepTokens;
use crate::sampler::{Sampler, TokenLogProb};
use crate::Error;

impl Session {
    /// Runs `id`, the token picked last, and picks the token after it, as `step` does: a step
    /// ahead where the engine and the sampler allow, submitting the step after it (whose token is
    /// the GPU's choice) before reading this one back, where `ahead` says the reply may go on.
    pub(super) async fn step_plain(
        &mut self,
        id: u32,
        sampler: &mut Sampler,
        ahead: bool,
    ) -> Result<(u32, Option<TokenLogProb>), Error> {
        // Neither changes within a reply: where they do not allow it, nothing is ahead.
        if !(self.engine.steps_ahead() && sampler.chooses_on_gpu()) {
            return self.step(&[id], sampler).await;
        }
        let n_logits = self.engine.n_logits();
        // The choices need nothing of the tokens before them: no history.
        let current = match self.ahead.take() {
            // Submitted at the step before, its token that step's choice, read back since: `id`.
            Some((step, _)) => step,
            None => {
                let want = sampler.want(&[], n_logits, &mut self.engine.stats.totals.mask)?;
                self.engine
                    .submit_step(StepTokens::Ids(&[id]), &want)
                    .await?
            }
        };
        self.cached.push(id);
        if ahead && self.engine.pos() < self.engine.n_ctx() {
            let draws = sampler.draws();
            let want = sampler.want(&[], n_logits, &mut self.engine.stats.totals.mask)?;
            let next = StepTokens::ChosenIn(&current);
            self.ahead = Some((self.engine.submit_step(next, &want).await?, draws));
        }
        let step = self.engine.finish_step(current).await?;
        let mask_time = &mut self.engine.stats.totals.mask;
        let (next, log_prob) = sampler.pick_from_step(step, &[], mask_time)?;
        sampler.accept(next, mask_time)?;
        Ok((next, log_prob))
    }

    /// Takes back the step submitted ahead, where one is (the reply ended before it), and gives
    /// `sampler` back the draw it took.
    pub(super) fn drop_ahead(&mut self, sampler: &mut Sampler) {
        if let Some((step, draws)) = self.ahead.take() {
            self.engine.drop_step(step);
            sampler.set_draws(draws);
        }
    }
}

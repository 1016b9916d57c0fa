//! Speculative decoding's check: the token picked last and a draft of the tokens after it run as one
//! pass of the parallel plan, a row each at consecutive positions of the one sequence, so that each
//! row's logits say what the model would pick after it. The rows past the first rejected draft
//! token are then dropped (`keep_checked`): a KV cache simply forgets them; a recurrent state has
//! taken them all in, so it goes back to its copy from before the check and runs the kept tokens
//! again.

use super::{copy_buffers, Engine};
use crate::gpu::{scratch_buffer, Segment, Turns};
use crate::sampler::{SequenceStep, Want};
use crate::Error;

/// What the last check ran, until `keep_checked` says how much of it stays.
pub(super) struct Checked {
    pos: u32,
    tokens: Vec<u32>,
    /// The recurrent states as they stood before the check (none for a model without them).
    states: Vec<wgpu::Buffer>,
}

impl Engine {
    /// Tokens one check may run (`LoadOptions::check_tokens`); 0 where the engine was loaded
    /// without a parallel plan.
    pub fn check_tokens(&self) -> u32 {
        self.forward.parallel.as_ref().map_or(0, |p| p.rows())
    }

    /// The rows of each plan a check or a parallel step may run, fewest first (plans of four and of
    /// eight rows beside one of more: `Parallel::steps`); none without a parallel plan.
    pub fn step_plan_rows(&self) -> Vec<u32> {
        (self.forward.parallel.iter())
            .flat_map(|p| p.plan_rows())
            .collect()
    }

    /// Runs once, on a cache that holds nothing yet, each plan a greedy reply's speculation runs (a
    /// prompt's chunk, a decode step, a check in each parallel plan: `step_plan_rows`), then
    /// forgets what they ran. Where a
    /// plan's first run compiles its kernels (a browser's WebGPU over ANGLE: tens of seconds for a
    /// model's plans on a CPU), they compile here, at load, rather than in the first steps and
    /// checks a reply times, whose times would make drafting look dearer than a plain step for
    /// most of the reply. Nothing where the cache holds tokens already.
    pub async fn warm_up(&mut self) -> Result<(), Error> {
        if self.pos != 0 {
            return Ok(());
        }
        self.feed(&[0, 0]).await?;
        self.step_wanted(&[0], &Want::Choice).await?;
        self.rewind(0);
        for rows in self.step_plan_rows() {
            let rows = rows as usize;
            self.check(&vec![0; rows], &vec![Want::Choice; rows])
                .await?;
            self.rewind(0);
        }
        self.gpu.finished().await?;
        Ok(())
    }

    /// Runs `tokens` at the next positions in one pass, a row each, and returns for each row the
    /// index of its largest logit and what `wants` asks of it: what follows each token. The cache
    /// then holds all of them, until `keep_checked`.
    pub async fn check(
        &mut self,
        tokens: &[u32],
        wants: &[Want],
    ) -> Result<Vec<SequenceStep>, Error> {
        let rows = self.check_tokens() as usize;
        if tokens.is_empty() || tokens.len() > rows {
            return Err(Error::Model(format!(
                "{} tokens in one check; the engine was loaded for 1 to {rows}",
                tokens.len()
            )));
        }
        if self.pos as usize + tokens.len() > self.n_ctx as usize {
            return Err(Error::ContextFull(self.n_ctx));
        }
        let mut states = match self.checked.take() {
            Some(earlier) => earlier.states,
            None => Vec::new(),
        };
        if states.is_empty() {
            for b in &self.forward.recurrent {
                states.push(scratch_buffer(&self.gpu, "states before a check", b.size()).await?);
            }
        }
        copy_buffers(&self.gpu, &self.forward.recurrent, &states);
        let pos = self.pos;
        let segment = Segment {
            turns: Turns::Text(self.turn_at(pos)),
            ..Segment::new(0, pos, tokens)
        };
        let out = self.run_rows(&[segment], wants).await?;
        self.pos += tokens.len() as u32;
        self.checked = Some(Checked {
            pos,
            tokens: tokens.to_vec(),
            states,
        });
        Ok(out)
    }

    /// Keeps the first `n` tokens of the last check in the cache and forgets the rest.
    pub async fn keep_checked(&mut self, n: usize) -> Result<(), Error> {
        let Some(checked) = &self.checked else {
            return Ok(());
        };
        if n >= checked.tokens.len() || self.pos != checked.pos + checked.tokens.len() as u32 {
            return Ok(());
        }
        if self.forward.recurrent.is_empty() {
            self.pos = checked.pos + n as u32;
            return Ok(());
        }
        copy_buffers(&self.gpu, &checked.states, &self.forward.recurrent);
        self.pos = checked.pos;
        let kept = checked.tokens[..n].to_vec();
        self.feed(&kept).await
    }
}

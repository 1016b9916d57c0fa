//! Decode steps a step ahead. Where the GPU itself chooses each token (greedy, or a sample drawn or
//! chosen on the GPU, `Want::Choice`, `Drawn`, `Chosen`) and nothing of it is needed on the CPU before
//! the next step runs, the next step is recorded and submitted before the step before it is read back:
//! its token is copied on the GPU from that step's choice into its input. The GPU then goes from one
//! step to the next without waiting for the CPU to read back, pick and record (a tenth to a fifth
//! of a step on a fast GPU), and the CPU reads a token back while the next one is computed. A step
//! submitted past the end of a reply is dropped unread (`drop_step`): a KV cache's row is simply
//! written again later. Models with a recurrent state (a step past the end would change it for good)
//! or rows read from the file by token id (Gemma 4's per-layer embeddings) step one at a time.

use super::sequences::read_step;
use super::{Engine, Read, Run, Submitted};
use crate::sampler::{SequenceStep, Want};
use crate::Error;

/// A decode step submitted and not yet read back (`Engine::submit_step`).
pub struct Pending {
    run: Submitted,
    read: Read,
    /// Its sequence's first row of the cache, and its position there.
    at: (u32, u32),
}

/// The token a step submitted by `Engine::submit_step` runs.
pub enum StepToken<'a> {
    Id(u32),
    /// The token the GPU chose in this step, submitted before it and not yet read back.
    ChosenIn(&'a Pending),
}

impl Engine {
    /// Whether decode steps may run ahead of what the CPU reads back (`submit_step`).
    pub fn steps_ahead(&self) -> bool {
        self.forward.recurrent.is_empty() && self.forward.token_rows.is_none()
    }

    /// Submits a decode step of `token` at the next position, reading back what `want` asks after
    /// it, and returns it unread (`finish_step` reads it). A step may follow one still pending,
    /// whose choice is its token; no more than that: two steps at most are pending at once.
    pub async fn submit_step(
        &mut self,
        token: StepToken<'_>,
        want: &Want,
    ) -> Result<Pending, Error> {
        if self.pos >= self.n_ctx {
            return Err(Error::ContextFull(self.n_ctx));
        }
        let step = self.submit_step_at((0, self.pos), token, want).await?;
        self.pos += 1;
        Ok(step)
    }

    /// `submit_step` for a sequence of several (parallel slots: `Slots`): at cache rows base + pos,
    /// `at`, whose caller keeps its place. A step that is not read is simply dropped: its row is
    /// written again later.
    pub async fn submit_step_at(
        &mut self,
        at: (u32, u32),
        token: StepToken<'_>,
        want: &Want,
    ) -> Result<Pending, Error> {
        assert!(self.steps_ahead(), "a model whose steps go one at a time");
        let (id, chosen) = match token {
            StepToken::Id(id) => (id, None),
            StepToken::ChosenIn(before) => {
                assert_eq!(before.at, (at.0, at.1 - 1), "the step before this one");
                (0, Some(before.read))
            }
        };
        let read = self.read_for(want, &self.sample, 0);
        let tokens = [id];
        let segments = self.segments(at.0, at.1, &tokens)?;
        let run = (self.submit_segments(Run::Decode(read), &segments, chosen)).await?;
        self.stats.totals.ahead += chosen.is_some() as u64;
        Ok(Pending { run, read, at })
    }

    /// Waits for a step `submit_step` submitted and reads back what its want asked.
    pub async fn finish_step(&mut self, step: Pending) -> Result<SequenceStep, Error> {
        let bytes = self.read_submitted(step.run).await?;
        Ok(read_step(&bytes.expect("read back"), step.read))
    }

    /// Takes back the last step submitted, unread (one past the end of a reply): its position is
    /// the next again.
    pub fn drop_step(&mut self, step: Pending) {
        assert_eq!(
            (step.at.0, step.at.1 + 1),
            (0, self.pos),
            "the last step submitted"
        );
        self.pos = step.at.1;
    }

    /// Where a step's choice is on the GPU: the word `read` reads back.
    pub(super) fn choice_at(&self, read: Read) -> (&wgpu::Buffer, u64) {
        assert!(
            matches!(read, Read::Greedy | Read::Chosen | Read::Drawn),
            "a step whose token is chosen on the CPU"
        );
        let (buffer, offset, _) = self.step_read_back(read).expect("a choice read back");
        (buffer, offset)
    }
}

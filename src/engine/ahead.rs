//! Decode steps a step ahead. Where the GPU itself chooses each token (greedy, or a sample drawn or
//! chosen on the GPU, `Want::Choice`, `Drawn`, `Chosen`) and nothing of it is needed on the CPU before
//! the next step runs, the next step is recorded and submitted before the step before it is read back:
//! its token is copied on the GPU from that step's choice into its input. The GPU then goes from one
//! step to the next without waiting for the CPU to read back, pick and record (a tenth to a fifth
//! of a step on a fast GPU), and the CPU reads a token back while the next one is computed. A step
//! submitted past the end of a reply is dropped unread (`drop_step`): a KV cache's row is simply
//! written again later. Models with a recurrent state (a step past the end would change it for good)
//! or rows read from the file by token id (Gemma 4's per-layer embeddings) step one at a time.
//!
//! Steps of sequences whose caller keeps their places (a server's slots) go ahead the same way
//! (`submit_rows`): one sequence's through the one-token plan, several in one pass of the parallel
//! plan, each row's token copied from the same row's choice in the pass before.

use super::sequences::{read_rows, read_step};
use super::{Engine, Read, Run, Submitted};
use crate::sampler::{SequenceStep, Want};
use crate::Error;

/// A decode step of one sequence or several in one pass, submitted and not yet read back
/// (`Engine::submit_step`, `submit_rows`).
pub struct Pending {
    run: Submitted,
    reads: Vec<Read>,
    /// Each row's sequence's first row of the cache, and its position there; one row is a pass of
    /// the one-token plan, several of the parallel plan.
    at: Vec<(u32, u32)>,
    /// Submitted before the pass before it was read back: its time from submit to result is not a
    /// step's (`StepTimes`), the pass before it having overlapped it.
    chained: bool,
    submitted: web_time::Instant,
}

/// The tokens a step runs, one a row.
pub enum StepTokens<'a> {
    Ids(&'a [u32]),
    /// The tokens the GPU chose in this step of the same sequences, each row its own row's.
    ChosenIn(&'a Pending),
}

impl Engine {
    /// Whether decode steps may run ahead of what the CPU reads back (`submit_step`).
    pub fn steps_ahead(&self) -> bool {
        self.forward.recurrent.is_empty() && self.forward.token_rows.is_none()
    }

    /// Submits a decode step of `tokens` (one) at the next position of the engine's one sequence,
    /// reading back what `want` asks after it, and returns it unread (`finish_step` reads it). A
    /// step may follow one still pending, whose choice is its token; no more than that: two steps
    /// at most are pending at once.
    pub async fn submit_step(
        &mut self,
        tokens: StepTokens<'_>,
        want: &Want,
    ) -> Result<Pending, Error> {
        if self.pos >= self.n_ctx {
            return Err(Error::ContextFull(self.n_ctx));
        }
        let at = [(0, self.pos)];
        let step = self
            .submit_rows(&at, tokens, std::slice::from_ref(want))
            .await?;
        self.pos += 1;
        Ok(step)
    }

    /// Submits a step of a token for each sequence at `at` (its first row of the cache, and its
    /// position there, which the caller keeps), reading back what `wants` asks after each, and
    /// returns it unread (`finish_rows` reads it): one sequence's through the one-token plan,
    /// several in one pass of the parallel plan. A step may follow one still pending of the same
    /// sequences, whose choices are its tokens. A step that is not read is simply dropped: its rows
    /// are written again later.
    pub async fn submit_rows(
        &mut self,
        at: &[(u32, u32)],
        tokens: StepTokens<'_>,
        wants: &[Want],
    ) -> Result<Pending, Error> {
        assert!(self.steps_ahead(), "a model whose steps go one at a time");
        assert_eq!(at.len(), wants.len(), "a want for each row");
        let most = self.check_tokens() as usize;
        if at.len() > 1 && at.len() > (self.sequences() as usize).min(most) {
            return Err(Error::Model(format!(
                "{} sequences in one step; the engine was loaded for {}",
                at.len(),
                self.sequences()
            )));
        }
        let (ids, chosen) = match tokens {
            StepTokens::Ids(ids) => (ids.to_vec(), vec![]),
            StepTokens::ChosenIn(before) => {
                let follows = |(b, p): &(u32, u32)| (*b, p + 1);
                let before_at: Vec<(u32, u32)> = before.at.iter().map(follows).collect();
                assert_eq!(
                    before_at, at,
                    "the step before this one, of the same sequences"
                );
                let chosen = match &before.reads[..] {
                    [read] => vec![self.choice_at(*read)],
                    reads => (reads.iter().enumerate())
                        .map(|(i, &read)| self.row_choice_at(i, read))
                        .collect(),
                };
                (vec![0; at.len()], chosen)
            }
        };
        let one = at.len() == 1;
        let reads: Vec<Read> = (wants.iter().enumerate())
            .map(|(i, want)| match one {
                true => self.read_for(want, &self.sample, 0),
                false => self.read_for(want, &self.row_samples[i], i as u32),
            })
            .collect();
        let runs: Vec<[u32; 1]> = ids.iter().map(|&id| [id]).collect();
        let mut segments = Vec::with_capacity(at.len());
        for (&(base, pos), token) in at.iter().zip(&runs) {
            segments.extend(self.segments(base, pos, token)?);
        }
        let submitted = web_time::Instant::now();
        let run = match one {
            true => Run::Decode(reads[0]),
            false => Run::Parallel { reads: &reads },
        };
        let run = self.submit_segments(run, &segments, &chosen).await?;
        self.stats.totals.ahead += !chosen.is_empty() as u64;
        assert_eq!(ids.len(), at.len(), "a token for each row");
        Ok(Pending {
            run,
            reads,
            at: at.to_vec(),
            chained: !chosen.is_empty(),
            submitted,
        })
    }

    /// Waits for a step `submit_rows` submitted and reads back what its wants asked of each row;
    /// a step that did not follow a pending one is timed as `step_sequences` times its passes.
    pub async fn finish_rows(&mut self, step: Pending) -> Result<Vec<SequenceStep>, Error> {
        let words = self.read_submitted(step.run).await?;
        if !step.chained {
            (self.step_times).record(step.at.len(), step.submitted.elapsed());
        }
        let words = words.expect("read back");
        Ok(match &step.reads[..] {
            [read] => vec![read_step(words, *read)],
            reads => read_rows(bytemuck::cast_slice(&words), reads, self.forward.n_logits),
        })
    }

    /// Waits for a step `submit_step` submitted and reads back what its want asked.
    pub async fn finish_step(&mut self, step: Pending) -> Result<SequenceStep, Error> {
        let mut read = self.finish_rows(step).await?;
        Ok(read.pop().expect("one sequence's step"))
    }

    /// Takes back the last step submitted, unread (one past the end of a reply): its position is
    /// the next again.
    pub fn drop_step(&mut self, step: Pending) {
        let [(base, pos)] = step.at[..] else {
            panic!("a step of several sequences, whose caller keeps their places")
        };
        assert_eq!((base, pos + 1), (0, self.pos), "the last step submitted");
        self.pos = pos;
    }

    /// Where a step's choice is on the GPU: the word `read` reads back.
    fn choice_at(&self, read: Read) -> (wgpu::Buffer, u64) {
        assert!(
            matches!(read, Read::Greedy | Read::Chosen | Read::Drawn),
            "a step whose token is chosen on the CPU"
        );
        let (buffer, offset, _) = self.step_read_back(read).expect("a choice read back");
        (buffer.clone(), offset)
    }

    /// Where row `i`'s choice is on the GPU after a pass of the parallel plan: its largest logit's
    /// index, or the word its sample plan chose.
    fn row_choice_at(&self, i: usize, read: Read) -> (wgpu::Buffer, u64) {
        let parallel = self.forward.parallel.as_ref().expect("a parallel plan");
        match read {
            Read::Greedy => (parallel.choices.clone(), 4 * i as u64),
            Read::Chosen | Read::Drawn => {
                let (buffer, offset, _) = self.row_samples[i].read_back(read);
                (buffer.clone(), offset)
            }
            _ => panic!("a step whose token is chosen on the CPU"),
        }
    }
}

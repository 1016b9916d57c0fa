//! Several sequences at once, each at its own rows of the cache (parallel requests). The caller keeps
//! each sequence's place; `Engine::pos` and `rewind` belong to the one-sequence calls.
//!
//! A decode step of n sequences runs either as one pass of the parallel plan (each weight read once
//! for every four tokens) or as n passes of the one-token plan. Where memory bandwidth bounds a step
//! (a GPU), the one pass costs about what one token does; where compute does (a CPU-backed adapter,
//! where a pass for 2 tokens does the arithmetic of 4), n passes can be cheaper.
//! Which is measured while serving (`StepTimes`), not guessed.

use super::sample::{candidate_bytes, read_ranked};
use super::{cast, values, Engine, Read, Run, Sample};
use crate::gpu::Segment;
use crate::sampler::{SequenceStep, Want};
use crate::Error;
use web_time::{Duration, Instant};

impl Engine {
    /// Sequences a parallel step may hold (`LoadOptions::sequences`).
    pub fn sequences(&self) -> u32 {
        self.sequences
    }

    /// Runs `tokens` of one sequence into cache rows base + pos on, a chunk per run where the model
    /// has a prefill plan; nothing read back.
    pub async fn feed_at(&mut self, base: u32, pos: u32, tokens: &[u32]) -> Result<(), Error> {
        let chunk = self.forward.prefill.as_ref().map_or(1, |p| p.batch) as usize;
        for (i, part) in tokens.chunks(chunk).enumerate() {
            let place = Segment::new(base, pos + (i * chunk) as u32, part);
            let run = match self.forward.prefill {
                Some(_) => Run::Prefill,
                None => Run::Decode(Read::Nothing),
            };
            self.run_segments(run, &[place]).await?;
        }
        Ok(())
    }

    /// Runs a prompt chunk of each of several sequences, each into its own cache rows, as one run of
    /// the prefill plan (their tokens together at most its batch); nothing read back. Without a
    /// prefill plan, each sequence's tokens run as `feed_at` runs them.
    pub async fn feed_sequences(&mut self, chunks: &[Segment<'_>]) -> Result<(), Error> {
        let Some(prefill) = &self.forward.prefill else {
            for c in chunks {
                self.feed_at(c.base, c.pos, c.tokens).await?;
            }
            return Ok(());
        };
        let tokens: usize = chunks.iter().map(|c| c.tokens.len()).sum();
        assert!(tokens <= prefill.batch as usize, "chunks beyond the batch");
        let mut segments = Vec::with_capacity(chunks.len());
        for c in chunks {
            segments.extend(self.segments(c.base, c.pos, c.tokens)?);
        }
        self.run_segments(Run::Prefill, &segments).await?;
        Ok(())
    }

    /// Whether a decode step of `n` sequences runs as one pass of the parallel plan rather than a
    /// pass of the one-token plan for each (`step_sequences`), whichever has been measured the
    /// faster for this many, or as set (`set_steps_together`): asked once a step.
    pub fn steps_together(&mut self, n: usize) -> bool {
        let fixed = self.step_times.fixed;
        n > 1 && fixed.unwrap_or_else(|| !self.step_times.one_at_a_time(n))
    }

    /// Fixes how steps of several sequences run, one pass (true) or one a sequence (false), for
    /// checks and measurements of either; None (the default) leaves it to `StepTimes`.
    pub fn set_steps_together(&mut self, together: Option<bool>) {
        self.step_times.fixed = together;
    }

    /// One decode step of several sequences, each segment one token at its own place: returns for
    /// each the index of its largest logit and what `wants` asks of it. One pass of the parallel
    /// plan where `together` (as `steps_together` decides), else a pass of the one-token plan for
    /// each; timed for the next decision.
    pub async fn step_sequences(
        &mut self,
        steps: &[Segment<'_>],
        wants: &[Want],
        together: bool,
    ) -> Result<Vec<SequenceStep>, Error> {
        let n = steps.len();
        if together {
            let start = Instant::now();
            let out = self.step_parallel(steps, wants).await?;
            self.step_times.record(n, start.elapsed());
            return Ok(out);
        }
        let mut out = Vec::with_capacity(n);
        for (step, want) in steps.iter().zip(wants) {
            let start = Instant::now();
            out.push(self.step_one(step, want).await?);
            self.step_times.record(1, start.elapsed());
        }
        Ok(out)
    }

    /// One pass of the parallel plan for the sequences of `steps` (as `step_sequences`): each row's
    /// candidates are picked after the step in the same pass.
    pub async fn step_parallel(
        &mut self,
        steps: &[Segment<'_>],
        wants: &[Want],
    ) -> Result<Vec<SequenceStep>, Error> {
        assert!(steps.iter().all(|s| s.tokens.len() == 1), "one token each");
        self.step_rows(steps, wants).await
    }

    /// One pass of the parallel plan over several sequences' rows (slots that check drafts: each
    /// segment a token picked last and the draft after it), reading back what `wants` asks of each
    /// row. The caller keeps each sequence's place, and the rows it keeps.
    pub async fn step_rows(
        &mut self,
        segments: &[Segment<'_>],
        wants: &[Want],
    ) -> Result<Vec<SequenceStep>, Error> {
        let rows: usize = segments.iter().map(|s| s.tokens.len()).sum();
        let most = self.check_tokens() as usize;
        if segments.len() > self.sequences() as usize || rows > most {
            return Err(Error::Model(format!(
                "{rows} rows of {} sequences in one step; the engine was loaded for {most} rows of {}",
                segments.len(),
                self.sequences()
            )));
        }
        self.run_rows(segments, wants).await
    }

    /// One pass of the parallel plan over the tokens of `segments`, a row each, reading back the
    /// index of each row's largest logit and what `wants` asks of it (its logits, or its candidates
    /// picked after the step in the same pass).
    pub(super) async fn run_rows(
        &mut self,
        segments: &[Segment<'_>],
        wants: &[Want],
    ) -> Result<Vec<SequenceStep>, Error> {
        let rows: usize = segments.iter().map(|s| s.tokens.len()).sum();
        assert_eq!(rows, wants.len(), "a want for each row");
        let reads: Vec<Read> = (wants.iter().enumerate())
            .map(|(i, want)| self.read_for(want, &self.row_samples[i], i as u32))
            .collect();
        let words = self
            .run_segments(Run::Parallel { reads: &reads }, segments)
            .await?;
        let words = words.expect("the choices are read back");
        Ok(read_rows(
            bytemuck::cast_slice(&words),
            &reads,
            self.forward.n_logits,
        ))
    }

    /// Runs `tokens` at the next positions and reads back what `want` asks after the last: one
    /// token (as `step_greedy`, `step_candidates` and `step` do), or a prompt's last run
    /// (`prompt_end`), at most a chunk.
    pub async fn step_wanted(
        &mut self,
        tokens: &[u32],
        want: &Want,
    ) -> Result<SequenceStep, Error> {
        if tokens.len() > self.stats.chunk_tokens as usize || tokens.is_empty() {
            return Err(Error::Model(format!(
                "{} tokens in one run; it takes 1 to {}",
                tokens.len(),
                self.stats.chunk_tokens
            )));
        }
        let read = self.read_for(want, &self.sample, 0);
        let words = self.run(Run::Decode(read), tokens).await?;
        Ok(read_step(words.expect("read back"), read))
    }

    /// What a run reads back for `want`; candidates are picked by `sample`'s plan, its pick written,
    /// and the tokens row `row` of the choices and candidates may take (all, unless a grammar's).
    pub(super) fn read_for(&self, want: &Want, sample: &Sample, row: u32) -> Read {
        let (want, bits) = match want {
            Want::Allowed { bits, then } => (&**then, Some(&bits[..])),
            want => (want, None),
        };
        self.forward.allowed.write(&self.gpu, row, bits);
        match want {
            Want::Choice => Read::Greedy,
            Want::Logits => Read::Logits,
            Want::Candidates { pick, log_sum_exp } => {
                sample.write_pick(&self.gpu, pick, *log_sum_exp)
            }
            Want::Chosen { pick, choose } => sample.write_choose(&self.gpu, pick, choose),
            Want::Drawn { pick, draw } => sample.write_draw(&self.gpu, pick, draw),
            Want::Allowed { .. } => panic!("a mask of a mask"),
        }
    }

    /// One sequence's token through the one-token decode plan.
    async fn step_one(&mut self, step: &Segment<'_>, want: &Want) -> Result<SequenceStep, Error> {
        assert_eq!(step.tokens.len(), 1, "one token");
        let read = self.read_for(want, &self.sample, 0);
        let words = self.run_segments(Run::Decode(read), &[*step]).await?;
        Ok(read_step(words.expect("read back"), read))
    }
}

/// What a pass of the parallel plan read back for each row: the rows' choices and their chances,
/// then what each row's `reads` read, one after the other.
pub(super) fn read_rows(bytes: &[u8], reads: &[Read], n_logits: u32) -> Vec<SequenceStep> {
    let (choices, rest) = bytes.split_at(reads.len() * 4);
    let (chances, mut rest) = rest.split_at(reads.len() * 4);
    let row_bytes = n_logits as usize * 4;
    let choices = cast::<u32>(choices).into_iter();
    (choices.zip(cast::<f32>(chances)).zip(reads))
        .map(|((id, chance), &read)| {
            let bytes = match read {
                Read::Candidates { .. } => candidate_bytes(read),
                Read::Chosen | Read::Drawn => 4,
                Read::Logits => row_bytes,
                _ => {
                    let chance = Some(chance);
                    return SequenceStep::Choice { id, chance };
                }
            };
            let (taken, after) = rest.split_at(bytes);
            rest = after;
            read_step(cast(taken), read)
        })
        .collect()
}

/// What a step read back for one sequence, from the words `read` read.
pub(super) fn read_step(words: Vec<u32>, read: Read) -> SequenceStep {
    match read {
        Read::Candidates { .. } => {
            SequenceStep::Candidates(read_ranked(bytemuck::cast_slice(&words), read))
        }
        Read::Logits => SequenceStep::Logits(values(words)),
        Read::Greedy => SequenceStep::Choice {
            id: words[0],
            chance: Some(f32::from_bits(words[1])),
        },
        _ => SequenceStep::Choice {
            id: words[0],
            chance: None,
        },
    }
}

/// The wall time of a one-sequence step and of a parallel step of each size, as measured (a moving
/// average), and how long each size has gone one sequence at a time.
#[derive(Default)]
pub(super) struct StepTimes {
    seconds: Vec<Option<f64>>,
    one_at_a_time_for: Vec<u32>,
    /// Set, it decides instead (`Engine::set_steps_together`).
    fixed: Option<bool>,
}

/// A size that goes one sequence at a time tries the parallel step again after this many steps, as
/// the adapter's load may have changed.
const RETRY_AFTER: u32 = 32;

impl StepTimes {
    pub(super) fn record(&mut self, n: usize, took: Duration) {
        if self.seconds.len() <= n {
            self.seconds.resize(n + 1, None);
        }
        let t = took.as_secs_f64();
        let average = &mut self.seconds[n];
        *average = Some(average.map_or(t, |a| 0.75 * a + 0.25 * t));
    }

    /// Whether n sequences should go one at a time: n one-sequence steps have been measured faster
    /// than one parallel step of n (and the parallel step is not due another try). Until both are
    /// measured, the one not yet measured: the parallel step first. (Sequences that all join at
    /// once never make a one-sequence step by themselves.)
    pub(super) fn one_at_a_time(&mut self, n: usize) -> bool {
        let time = |k: usize| self.seconds.get(k).copied().flatten();
        let (Some(one), Some(many)) = (time(1), time(n)) else {
            return time(n).is_some();
        };
        if many <= one * n as f64 {
            return false;
        }
        if self.one_at_a_time_for.len() <= n {
            self.one_at_a_time_for.resize(n + 1, 0);
        }
        let waited = &mut self.one_at_a_time_for[n];
        *waited += 1;
        if *waited > RETRY_AFTER {
            *waited = 0;
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_go_one_at_a_time_only_where_measured_faster() {
        let mut times = StepTimes::default();
        let ms = Duration::from_millis;
        // Nothing measured: the parallel step; then one at a time, to measure that too.
        assert!(!times.one_at_a_time(4));
        times.record(4, ms(300));
        assert!(
            times.one_at_a_time(4),
            "a one-sequence step is yet to be measured"
        );
        times.record(1, ms(100));
        times.record(4, ms(300));
        assert!(!times.one_at_a_time(4), "4 at once beat 4 one at a time");
        times.record(2, ms(500));
        assert!(times.one_at_a_time(2), "2 one at a time beat 2 at once");
        // Now and then the parallel step is tried again.
        let tries = (0..2 * RETRY_AFTER)
            .filter(|_| !times.one_at_a_time(2))
            .count();
        assert_eq!(tries, 1);
    }
}

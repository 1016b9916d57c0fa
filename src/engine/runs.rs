//! A run of the engine: its tokens checked and written, the plan it names recorded and submitted in
//! one pass, with what it reads back copied into a staging buffer (`submit_segments`), and that read
//! back once the GPU has run it (`read_submitted`). Two staging buffers serve in turn, so that a step
//! may be submitted before the one before it is read back (`ahead.rs`). While the GPU runs a step
//! of a token a sequence that is read back at once, the next such step's commands are recorded
//! (`record_next`), so that the CPU's recording is not between one step's result and the next.

use super::sample::Read;
use super::Engine;
use crate::gpu::{map_and_copy, Plan, Segment};
use crate::Error;
use web_time::Instant;

impl Engine {
    /// Runs the tokens of `segments` (`submit_segments`) and reads back what `run` says (as words:
    /// every value read back is 4 bytes).
    pub(super) async fn run_segments(
        &mut self,
        run: Run<'_>,
        segments: &[Segment<'_>],
    ) -> Result<Option<Vec<u32>>, Error> {
        // Read back at once, it leaves its staging buffer free: the other may be a step's submitted
        // ahead and unread (a server's slot stepping alone while another request's prompt is read,
        // or embeddings are answered), which the next step's must not take.
        let held = self.last_staging;
        let submitted = self.submit_segments(run, segments, &[]).await?;
        self.last_staging = held;
        self.record_next(run, segments);
        self.read_submitted(submitted).await
    }

    /// Checks a run of the tokens of `segments` (each a sequence's, at its own rows of the cache),
    /// writes its inputs, and records and submits one pass of the plan `run` names, what it reads
    /// back copied into a staging buffer; waits for nothing. Where `chosen` names the words where
    /// the step before's choices lie (ahead.rs: `choice_at`, `row_choice_at`), the run's first
    /// tokens are the tokens they hold, copied on the GPU before the pass: a step submitted before
    /// the one it follows is read back (`ahead`).
    pub(super) async fn submit_segments(
        &mut self,
        run: Run<'_>,
        segments: &[Segment<'_>],
        chosen: &[(wgpu::Buffer, u64)],
    ) -> Result<Submitted, Error> {
        self.gpu.alive()?;
        let n_ctx = self.n_ctx as usize;
        if segments
            .iter()
            .any(|s| (s.base + s.pos) as usize + s.tokens.len() > n_ctx)
        {
            return Err(Error::ContextFull(self.n_ctx));
        }
        let tokens: Vec<u32> = segments.iter().flat_map(|s| s.tokens).copied().collect();
        let tokens = &tokens[..];
        let n_vocab = self.forward.n_vocab;
        let next = match run {
            Run::Score { next } => Some(next),
            _ => None,
        };
        // A prompt's runs may name images' rows (`inject`).
        let images = matches!(run, Run::Prefill | Run::Decode(_));
        let bad = (tokens.iter()).find(|&&t| t >= n_vocab && !(images && self.names_rows(t)));
        if let Some(&token) = bad {
            return Err(Error::BadToken { token, n_vocab });
        }
        // A score reads the next token's logit.
        let n_logits = self.forward.n_logits;
        if let Some(token) = next.filter(|&t| t >= n_logits) {
            return Err(Error::BadToken {
                token,
                n_vocab: n_logits,
            });
        }
        let start = Instant::now();
        let recorded = self.recorded.take();
        let record_start = start;
        let gpu = &self.gpu;
        let f = &self.forward;
        f.step.write_segments(gpu, segments, next.unwrap_or(0));
        self.write_injected(tokens);
        if let Some(rows) = &f.token_rows {
            rows.write(gpu, tokens).await?;
        }
        // The staging buffer the run before did not use: that one may not be read back yet.
        let staging = 1 - self.last_staging;
        let recipe = self.recipe(run, segments);
        let (dispatches, weight_bytes) = (recipe.dispatches(), recipe.weight_bytes());
        // Commands recorded while the run before ran serve where they were recorded for this run.
        let key = recipe
            .key(run, tokens.len(), staging)
            .filter(|_| chosen.is_empty());
        let recorded = recorded.filter(|r| key.as_ref() == Some(&r.key));
        let was_recorded = recorded.is_some();
        let read_bytes = recipe.read_bytes();
        let commands = match recorded {
            Some(r) => r.commands,
            None => self.record(&recipe, tokens.len() as u32, chosen, staging),
        };
        if read_bytes > 0 {
            self.last_staging = staging;
        }
        let submit_start = Instant::now();
        let index = gpu.queue.submit([commands]);
        let submitted = Instant::now();
        let t = &mut self.stats.totals;
        t.runs += 1;
        t.recorded_ahead += was_recorded as u64;
        t.tokens += tokens.len() as u64;
        t.dispatches += dispatches as u64;
        t.weight_bytes += weight_bytes;
        t.read_bytes += read_bytes;
        t.record += submit_start - record_start;
        t.submit += submitted - submit_start;
        Ok(Submitted {
            index,
            staging,
            read_bytes,
            start,
        })
    }

    /// Where what `read` reads back after a one-token run lies: (buffer, offset, bytes).
    pub(super) fn step_read_back(&self, read: Read) -> Option<(&wgpu::Buffer, u64, u64)> {
        match read {
            Read::Nothing => None,
            Read::Logits => Some((&self.forward.logits, 0, self.forward.n_logits as u64 * 4)),
            Read::Greedy => Some((&self.greedy_choice, 0, 8)),
            Read::Candidates { .. } | Read::Chosen | Read::Drawn => {
                Some(self.sample.read_back(read))
            }
        }
    }

    /// What `run` of the tokens of `segments` records: its plan, what runs after it in the same
    /// pass, and what it reads back.
    fn recipe(&self, run: Run<'_>, segments: &[Segment<'_>]) -> Recipe<'_> {
        let f = &self.forward;
        let n_tokens: usize = segments.iter().map(|s| s.tokens.len()).sum();
        // A decode run of several tokens is a prompt's last chunk, which ends in its logits.
        let ends_prompt = matches!(run, Run::Decode(_)) && n_tokens > 1;
        // The plan, and the spans (buffer, offset, bytes) read back one after the other.
        let (plan, read_back) = match run {
            Run::Prefill => (f.prefill.as_ref().expect("a prefill plan"), vec![]),
            Run::Score { .. } => {
                let score = f.score.as_ref().expect("a scoring plan");
                let bytes = n_tokens as u64 * 4;
                (&score.plan, vec![(&score.log_probs, 0, bytes)])
            }
            Run::Hidden { rows } => {
                let hidden = f.hidden.as_ref().expect("a hidden-state run");
                let row = hidden.width as u64 * 4;
                let (first, end) = rows;
                let bytes = (end - first) as u64 * row;
                let read = (bytes > 0).then_some((&hidden.states, first as u64 * row, bytes));
                (&hidden.plan, read.into_iter().collect())
            }
            Run::Parallel { reads } => {
                let parallel = f.parallel.as_ref().expect("a parallel decode plan");
                // Where any row's token is deep into its context, every row's attention splits.
                let last = (segments.iter())
                    .map(|s| (s.pos + s.tokens.len() as u32).saturating_sub(1))
                    .max()
                    .unwrap_or(0);
                let plan = parallel.plan_for(n_tokens as u32, last);
                let row = f.n_logits as u64 * 4;
                // The rows' choices, then their chances (after as many as the plan has rows).
                let choices = n_tokens as u64 * 4;
                let chances = plan.batch as u64 * 4;
                let choices = [
                    (&parallel.choices, 0, choices),
                    (&parallel.choices, chances, choices),
                ];
                let rows = reads
                    .iter()
                    .enumerate()
                    .filter_map(|(i, read)| match *read {
                        Read::Logits => Some((&parallel.logits, i as u64 * row, row)),
                        Read::Candidates { .. } | Read::Chosen | Read::Drawn => {
                            Some(self.row_samples[i].read_back(*read))
                        }
                        Read::Greedy | Read::Nothing => None,
                    });
                (plan, choices.into_iter().chain(rows).collect())
            }
            Run::Decode(read) => {
                let plan = match ends_prompt {
                    true => f.prefill.as_ref().expect("a prefill plan"),
                    false => f.decode_at(segments[0].pos),
                };
                (plan, self.step_read_back(read).into_iter().collect())
            }
        };
        // What runs after the step, in the same pass: the head of a chunk's last token where a
        // prompt's last chunk ends in its logits, then what reduces the logits for the sampler.
        let head = f.prompt_head.as_ref().filter(|_| ends_prompt);
        let after: Vec<&Plan> = match run {
            Run::Decode(Read::Greedy) => vec![&self.greedy],
            Run::Decode(read @ (Read::Candidates { .. } | Read::Chosen | Read::Drawn)) => {
                vec![self.sample.plan_for(read)]
            }
            Run::Parallel { reads } => (reads.iter().enumerate())
                .filter(|(_, read)| {
                    matches!(read, Read::Candidates { .. } | Read::Chosen | Read::Drawn)
                })
                .map(|(i, read)| self.row_samples[i].plan_for(*read))
                .collect(),
            _ => vec![],
        };
        Recipe {
            plan,
            after: head.into_iter().chain(after).collect(),
            read_back,
        }
    }

    /// Records one pass of `recipe` over `tokens`, after copying the tokens `chosen` names into the
    /// run's inputs (`submit_segments`), and the copies of what it reads back into staging buffer
    /// `staging`, one after the other.
    fn record(
        &self,
        recipe: &Recipe<'_>,
        tokens: u32,
        chosen: &[(wgpu::Buffer, u64)],
        staging: usize,
    ) -> wgpu::CommandBuffer {
        let gpu = &self.gpu;
        let mut enc = gpu.device.create_command_encoder(&Default::default());
        for (i, (buffer, offset)) in chosen.iter().enumerate() {
            self.forward.step.copy_token(&mut enc, (buffer, *offset), i);
        }
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            recipe.plan.record(&mut pass, tokens);
            for after in &recipe.after {
                after.record(&mut pass, 1);
            }
        }
        let mut at = 0;
        for &(buffer, offset, bytes) in &recipe.read_back {
            enc.copy_buffer_to_buffer(buffer, offset, &self.staging[staging], at, bytes);
            at += bytes;
        }
        enc.finish()
    }

    /// Records the step most likely to follow a step of a token a sequence just submitted (the same
    /// sequences and reads, each one position on) while the GPU runs it, so that the CPU's
    /// recording (0.6 ms of a 7.9 ms step on an 8B model on an H200) leaves the time between one
    /// step's result and the next step's start; the next `submit_segments` uses it where it asks
    /// for just that, and drops it otherwise. Its inputs (tokens, positions, a grammar's masks,
    /// a pick's settings) are written when it is submitted.
    fn record_next(&mut self, run: Run<'_>, segments: &[Segment<'_>]) {
        let steps = match run {
            Run::Decode(_) => segments.len() == 1,
            Run::Parallel { .. } => true,
            Run::Prefill | Run::Score { .. } | Run::Hidden { .. } => false,
        };
        if !steps || segments.iter().any(|s| s.tokens.len() != 1) {
            return;
        }
        let start = Instant::now();
        let token = [0];
        let next: Vec<Segment> = (segments.iter())
            .map(|s| Segment::new(s.base, s.pos + 1, &token))
            .collect();
        let staging = 1 - self.last_staging;
        let recipe = self.recipe(run, &next);
        let key = (recipe.key(run, next.len(), staging)).expect("a step's key");
        let commands = self.record(&recipe, next.len() as u32, &[], staging);
        self.recorded = Some(Recorded { key, commands });
        self.stats.totals.record_ahead += start.elapsed();
    }

    /// Waits for a run `submit_segments` submitted and reads back what it copied (nothing where it
    /// copied nothing).
    pub(super) async fn read_submitted(
        &mut self,
        run: Submitted,
    ) -> Result<Option<Vec<u32>>, Error> {
        let wait_start = Instant::now();
        let gpu = &self.gpu;
        let values = match run.read_bytes {
            0 => {
                let _ = gpu.device.poll(wgpu::PollType::Poll);
                None
            }
            bytes => {
                let staging = &self.staging[run.staging];
                Some(map_and_copy(gpu, staging, bytes, Some(run.index)).await?)
            }
        };
        let t = &mut self.stats.totals;
        t.time += run.start.max(self.read_until).elapsed();
        t.wait += wait_start.elapsed();
        self.read_until = Instant::now();
        Ok(values)
    }
}

/// Which plan a run records, and what it reads back.
#[derive(Clone, Copy)]
pub(super) enum Run<'a> {
    /// Tokens through the model, what `Read` says read back after the last: one token through the
    /// decode plan; a prompt's last chunk through the prefill plan, then the head of its last token.
    Decode(Read),
    /// One token of each sequence through the parallel decode plan: the choice of each read back,
    /// and what else `reads` asks of each (its logits, or its candidates as its row's pick asks).
    Parallel { reads: &'a [Read] },
    /// A prompt chunk through the prefill plan; nothing read back.
    Prefill,
    /// A chunk through the scoring plan, `next` the token after its last; each token's
    /// log-probability of its successor read back.
    Score { next: u32 },
    /// A chunk through the hidden-state run; the states of its tokens `rows` read back.
    Hidden { rows: (u32, u32) },
}

/// What a run records (`Engine::recipe`): its plan, the plans after it in the same pass, and the
/// spans (buffer, offset, bytes) it reads back, one after the other.
struct Recipe<'a> {
    plan: &'a Plan,
    after: Vec<&'a Plan>,
    read_back: Vec<(&'a wgpu::Buffer, u64, u64)>,
}

impl Recipe<'_> {
    fn dispatches(&self) -> usize {
        self.plan.dispatches.len() + self.after.iter().map(|p| p.dispatches.len()).sum::<usize>()
    }

    fn weight_bytes(&self) -> u64 {
        self.plan.weight_bytes + self.after.iter().map(|p| p.weight_bytes).sum::<u64>()
    }

    /// The bytes it copies into a staging buffer to read back.
    fn read_bytes(&self) -> u64 {
        self.read_back.iter().map(|&(_, _, bytes)| bytes).sum()
    }

    /// What commands recorded ahead must have been recorded for to serve this recipe as `run` of
    /// `tokens` copying into staging buffer `staging`: a one-token decode step's, or a parallel
    /// step's, only.
    fn key(&self, run: Run<'_>, tokens: usize, staging: usize) -> Option<RecordedKey> {
        let reads = match run {
            Run::Decode(read) if tokens == 1 => vec![read],
            Run::Parallel { reads } => reads.to_vec(),
            _ => return None,
        };
        Some(RecordedKey {
            reads,
            plan: std::ptr::from_ref(self.plan) as usize,
            staging,
        })
    }
}

/// What a step's commands recorded ahead (`Engine::record_next`) were recorded for: what it reads
/// back of each row (one a row), its plan (by address, never followed: the engine's plans stay where
/// they are, and `retune_plans` drops commands recorded before it; the one-token plan and the
/// parallel plans are apart, so the address also says which run it was), and its staging buffer.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct RecordedKey {
    reads: Vec<Read>,
    plan: usize,
    staging: usize,
}

/// A step's commands, recorded while the step before it ran.
pub(super) struct Recorded {
    key: RecordedKey,
    commands: wgpu::CommandBuffer,
}

/// A run submitted (`submit_segments`) and not yet read back.
pub(super) struct Submitted {
    index: wgpu::SubmissionIndex,
    /// The staging buffer it copies what it reads back into, and how many bytes.
    staging: usize,
    read_bytes: u64,
    start: Instant,
}

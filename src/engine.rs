//! A loaded model on the GPU: load, prompts in chunks and decode steps one token at a time (each run one
//! pass and one submit), and the counters that say what a token costs.

use crate::embeddings::Pooling;
use crate::gguf::{read_header, ByteSource, Header};
use crate::gpu::{scratch_buffer, Gpu, GpuError, KvType, Plan};
use crate::models::{self, Forward, Loader};
use crate::Error;
use std::sync::Arc;
use web_time::{Duration, Instant};

mod ahead;
mod check;
mod embed;
mod image_rows;
mod inject;
mod options;
mod profile;
mod runs;
mod sample;
mod sequences;
mod tune;
mod tune_rounds;
use crate::sampler::Ranked;
pub use ahead::{Pending, StepTokens};
pub use options::{default_batch, default_kv_cache, LoadOptions};
pub use profile::{Profile, Profiled};
use runs::{Run, Submitted};
use sample::{read_ranked, Read, Sample};
pub use tune::{TuneShapes, TuneTimes, Tuned, Tuner};

/// What the engine has done, and what one step costs.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Of a decode step.
    pub dispatches_per_token: u32,
    /// Prompt tokens per run (1 where prompts go one token at a time).
    pub chunk_tokens: u32,
    /// Dispatches in each transformer layer.
    pub dispatches_per_layer: Vec<u32>,
    pub submits_per_token: u32,
    pub weight_bytes_per_token: u64,
    /// Bytes each token reads from the file itself, of a table left off the GPU (Gemma 4's
    /// per-layer embeddings); 0 for most models.
    pub row_bytes_per_token: u64,
    /// How the KV cache holds keys and values (Multi-head Latent Attention's: f32 whatever this).
    pub kv_cache: KvType,
    /// What every run so far added up to (decode steps and prompt chunks alike), and the wall time
    /// they took, submit to result.
    pub totals: Totals,
}

/// Counters over runs: subtract two readings to get what the runs between them cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    pub runs: u64,
    pub tokens: u64,
    pub dispatches: u64,
    pub weight_bytes: u64,
    /// Bytes copied back from the GPU.
    pub read_bytes: u64,
    /// Decode steps submitted before the step before them was read back (`Engine::submit_step`).
    pub ahead: u64,
    /// Runs submitted with commands recorded while the run before them ran (`record_next`).
    pub recorded_ahead: u64,
    /// Wall time, call to result, and the three parts of it: writing the inputs and recording the
    /// pass, the submit call, and from the submit's return to the values read back (the GPU's work,
    /// then the map and copy; a run that reads nothing back only polls). A step run ahead is timed
    /// from the read of the step before it, and its record and submit, made while that one ran, are
    /// in that one's time.
    pub time: Duration,
    pub record: Duration,
    /// Recording the next decode step's pass while the GPU ran this one (`record_next`): outside
    /// the three parts above, where on a GPU it takes none of a step's time.
    pub record_ahead: Duration,
    pub submit: Duration,
    pub wait: Duration,
    /// Outside the runs: the grammar's work between steps (each step's mask of allowed tokens, and
    /// moving past the token picked), where a reply is constrained.
    pub mask: Duration,
}

impl std::ops::Add for Totals {
    type Output = Totals;
    fn add(self, more: Totals) -> Totals {
        Totals {
            runs: self.runs + more.runs,
            tokens: self.tokens + more.tokens,
            dispatches: self.dispatches + more.dispatches,
            weight_bytes: self.weight_bytes + more.weight_bytes,
            read_bytes: self.read_bytes + more.read_bytes,
            ahead: self.ahead + more.ahead,
            recorded_ahead: self.recorded_ahead + more.recorded_ahead,
            time: self.time + more.time,
            record: self.record + more.record,
            record_ahead: self.record_ahead + more.record_ahead,
            submit: self.submit + more.submit,
            wait: self.wait + more.wait,
            mask: self.mask + more.mask,
        }
    }
}

impl std::ops::Sub for Totals {
    type Output = Totals;
    fn sub(self, earlier: Totals) -> Totals {
        Totals {
            runs: self.runs - earlier.runs,
            tokens: self.tokens - earlier.tokens,
            dispatches: self.dispatches - earlier.dispatches,
            weight_bytes: self.weight_bytes - earlier.weight_bytes,
            read_bytes: self.read_bytes - earlier.read_bytes,
            ahead: self.ahead - earlier.ahead,
            recorded_ahead: self.recorded_ahead - earlier.recorded_ahead,
            time: self.time - earlier.time,
            record: self.record - earlier.record,
            record_ahead: self.record_ahead - earlier.record_ahead,
            submit: self.submit - earlier.submit,
            wait: self.wait - earlier.wait,
            mask: self.mask - earlier.mask,
        }
    }
}

pub struct Engine {
    pub gpu: Arc<Gpu>,
    pub header: Header,
    forward: Forward,
    /// After a decode step, the index of its largest logit into `greedy_choice`: what a greedy step
    /// reads back instead of the logits.
    greedy: Plan,
    greedy_choice: wgpu::Buffer,
    /// After a decode step, the sampler's candidates: the repetition penalty, then the top k logits
    /// with their ids (`step_candidates`).
    sample: Sample,
    /// The same for each row of a parallel step's logits (`step_sequences`).
    row_samples: Vec<Sample>,
    /// Mapped to read back the logits (n_vocab f32), or what else a run reads: two, used in turn,
    /// so that a step can be submitted before the one before it is read back (`ahead`).
    staging: [wgpu::Buffer; 2],
    /// The staging buffer the last step submitted to be read later used (`submit_step`): the next
    /// run takes the other (a run read back at once leaves it as it was: `run_segments`).
    last_staging: usize,
    /// The next decode step's commands, recorded while the GPU ran the step before it
    /// (`record_next`); dropped where the next run is another, and where the plans are retuned.
    recorded: Option<runs::Recorded>,
    /// When the last run was read back: a step submitted before then (a step ahead) is timed from
    /// then on, so that `Totals::time` counts no wall time twice.
    read_until: Instant,
    n_ctx: u32,
    pos: u32,
    /// Copies of the recurrent states (`Forward::recurrent`) at earlier positions, oldest first: what
    /// `rewind` goes back to in a model whose state cannot be truncated as a KV cache is.
    snapshots: Vec<Snapshot>,
    /// How `embed` pools, where the engine was loaded for embeddings.
    pooling: Option<Pooling>,
    /// What steps of several sequences cost, as measured (`step_sequences`).
    step_times: sequences::StepTimes,
    /// Sequences a parallel step may hold (`LoadOptions::sequences`).
    sequences: u32,
    /// The last speculative check, until `keep_checked` says how much of it stays.
    checked: Option<check::Checked>,
    /// The images whose rows runs may name in place of token embeddings (`inject`).
    images: image_rows::ImageRows,
    /// Where the images in the sequence put later tokens' rotations (multimodal RoPE).
    image_turns: inject::ImageTurns,
    /// The vision projector whose images' rows those are (`attach_projector`): its plans are tuned
    /// with the model's.
    projector: Option<crate::vision::Projector>,
    pub stats: Stats,
}

/// A model's recurrent states as they stood after `pos` tokens.
struct Snapshot {
    pos: u32,
    buffers: Vec<wgpu::Buffer>,
}

/// Snapshots kept at most: a chat keeps one where each turn's prompt ends, and regenerating,
/// editing the last message or dropping old turns go back to one of the last few.
pub const MAX_SNAPSHOTS: usize = 4;

impl Engine {
    /// Reads the header, checks the architecture and streams the weights into the GPU.
    /// `progress` receives (bytes loaded, bytes in all).
    pub async fn load(
        gpu: Arc<Gpu>,
        source: &dyn ByteSource,
        options: &LoadOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Engine, Error> {
        let header = read_header(source).await?;
        Engine::load_with_header(gpu, header, source, options, progress).await
    }

    pub async fn load_with_header(
        gpu: Arc<Gpu>,
        header: Header,
        source: &dyn ByteSource,
        options: &LoadOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Engine, Error> {
        if options.n_ctx == 0 {
            return Err(Error::Model("the context length must be at least 1".into()));
        }
        let batch = (options
            .batch
            .unwrap_or_else(|| default_batch(&gpu, &header)))
        .max(options.min_batch);
        if batch == 0 {
            return Err(Error::Model(
                "the prompt batch must be at least 1 token".into(),
            ));
        }
        if options.sequences == 0 || options.sequences > options.n_ctx {
            return Err(Error::Model(format!(
                "{} parallel sequences in a context of {} positions: each needs one at least",
                options.sequences, options.n_ctx
            )));
        }
        gpu.alive()?;
        let mut loader = Loader::new(gpu.clone(), &header, source, progress)?;
        loader.per_layer_on_gpu = options.per_layer_on_gpu;
        loader.head_rows = options.head_rows;
        let kv_cache = (options.kv_cache).unwrap_or_else(|| options::default_kv_cache(&gpu));
        loader.kv_cache = kv_cache;
        let n_ctx_train = models::n_ctx_train(&loader);
        let n_ctx = options.n_ctx.min(n_ctx_train.max(1));
        let sequences = options.sequences.min(n_ctx);
        // Rows of the parallel plan: a sequence each in a step of several, or a token each in a
        // speculative step's check.
        let rows = sequences.max(options.check_tokens).min(n_ctx);
        // An encoder reads each input in one run; a parallel step's tokens are a run too.
        let batch = match models::causal(&loader.arch) {
            true => batch.max(rows).min(n_ctx),
            false => n_ctx,
        };
        let pooling = match options.pooling {
            Some(p) => Some(p),
            None => Pooling::of_model(&header)?,
        };
        let runs = models::PromptRuns {
            batch,
            scoring: options.scoring,
            embeddings: pooling.is_some(),
            rows,
        };
        // Every buffer is allocated before any weight is read: a model the adapter cannot hold, or one
        // that cannot run as asked, is refused having read its header and small vectors alone.
        let loaded = async {
            let forward = models::load(&mut loader, n_ctx, runs).await?;
            if sequences > 1 && !forward.recurrent.is_empty() {
                return Err(Error::Model(format!(
                    "{} keeps one recurrent state, so it runs one sequence at a time, not {sequences}",
                    loader.arch
                )));
            }
            loader.fill().await?;
            Ok(forward)
        };
        let forward = loaded.await.map_err(|e| {
            // The buffers allocated so far are dropped with the error, but the queue still holds any
            // writes that were filling them (and so the buffers) until its next submit: flush it now.
            gpu.flush_writes();
            match e {
                Error::Gpu(e @ (GpuError::TooLarge { .. } | GpuError::OutOfMemory { .. })) => {
                    Error::DoesNotFit {
                        adapter: gpu.describe(),
                        weight_bytes: header.tensors.iter().map(|t| t.bytes()).sum(),
                        why: e,
                    }
                }
                e => e,
            }
        })?;
        drop(loader);
        let states = forward.hidden.as_ref().map_or(0, |h| h.states.size());
        let staging = [0, 1].map(|_| {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("logits staging"),
                size: (forward.n_logits.max(batch) as u64 * 4)
                    .max(crate::sampler::K_MAX as u64 * 8)
                    .max(states)
                    // Every row's choice and its chance, then every row's logits.
                    .max(rows as u64 * (forward.n_logits as u64 + 2) * 4),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        });
        let greedy_choice = crate::ops::argmax::choice_bytes(1, forward.n_logits);
        let greedy_choice = scratch_buffer(&gpu, "greedy choice", greedy_choice).await?;
        let mut greedy = Plan::new(&gpu, &forward.step, 1);
        crate::ops::argmax::push(
            &mut greedy,
            &forward.logits,
            &greedy_choice,
            forward.n_logits,
            &forward.allowed,
        );
        greedy.finish(&gpu).await?;
        let sample = Sample::new(&gpu, &forward, &forward.logits, 0).await?;
        let mut row_samples = Vec::new();
        if let Some(parallel) = &forward.parallel {
            for row in 0..parallel.rows() {
                row_samples.push(Sample::new(&gpu, &forward, &parallel.logits, row).await?);
            }
        }
        let stats = Stats {
            dispatches_per_token: forward.decode.dispatches.len() as u32,
            chunk_tokens: forward.prefill.as_ref().map_or(1, |p| p.batch),
            dispatches_per_layer: forward.decode.dispatches_per_layer(),
            submits_per_token: 1,
            weight_bytes_per_token: forward.decode.weight_bytes,
            row_bytes_per_token: forward.token_rows.as_ref().map_or(0, |r| r.row_bytes()),
            kv_cache,
            ..Default::default()
        };
        Ok(Engine {
            gpu,
            header,
            forward,
            greedy,
            greedy_choice,
            sample,
            row_samples,
            staging,
            last_staging: 0,
            recorded: None,
            read_until: Instant::now(),
            n_ctx,
            pos: 0,
            snapshots: Vec::new(),
            pooling,
            step_times: Default::default(),
            sequences,
            checked: None,
            images: Default::default(),
            image_turns: Default::default(),
            projector: None,
            stats,
        })
    }

    /// Tokens the model reads (ids from here on are rows given in place of embeddings).
    pub fn n_vocab(&self) -> u32 {
        self.forward.n_vocab
    }

    /// Logits a row: the tokens a choice, a draw or a sampler's mask is over (`Forward::n_logits`).
    pub fn n_logits(&self) -> u32 {
        self.forward.n_logits
    }

    pub fn n_ctx(&self) -> u32 {
        self.n_ctx
    }

    /// Positions filled in the KV cache.
    pub fn pos(&self) -> u32 {
        self.pos
    }

    /// Forgets every position from `pos` on and returns the positions still held: `pos` where the
    /// model's memory is a KV cache, whose rows past it are simply written again. A recurrent state
    /// holds the whole sequence at once, so a model with one goes back to its latest snapshot at or
    /// before `pos` (`snapshot`), or to the start; the caller runs the tokens from there again.
    pub fn rewind(&mut self, pos: u32) -> u32 {
        if pos >= self.pos {
            return self.pos;
        }
        self.image_turns.forget_from(pos);
        if self.forward.recurrent.is_empty() {
            self.pos = pos;
            return pos;
        }
        self.snapshots.retain(|s| s.pos <= pos);
        self.pos = match self.snapshots.last() {
            // Runs from position 0 start from empty states.
            None => 0,
            Some(s) => {
                copy_buffers(&self.gpu, &s.buffers, &self.forward.recurrent);
                s.pos
            }
        };
        self.pos
    }

    /// Keeps a copy of the recurrent states at the current position, which a later `rewind` to it or
    /// past it goes back to; the oldest of `MAX_SNAPSHOTS` makes room. Nothing for a model without
    /// recurrent states.
    pub async fn snapshot(&mut self) -> Result<(), Error> {
        let pos = self.pos;
        // At position 0 there is nothing to keep: runs from there start from empty states.
        let kept = self.snapshots.iter().any(|s| s.pos == pos);
        if self.forward.recurrent.is_empty() || pos == 0 || kept {
            return Ok(());
        }
        let buffers = match self.snapshots.len() >= MAX_SNAPSHOTS {
            true => self.snapshots.remove(0).buffers,
            false => {
                let mut copies = Vec::new();
                for b in &self.forward.recurrent {
                    copies.push(scratch_buffer(&self.gpu, "state snapshot", b.size()).await?);
                }
                copies
            }
        };
        copy_buffers(&self.gpu, &self.forward.recurrent, &buffers);
        self.snapshots.push(Snapshot { pos, buffers });
        Ok(())
    }

    /// Whether the model carries recurrent states from run to run (`Forward::recurrent`), which
    /// going back to an earlier position needs a snapshot of (`snapshot`).
    pub fn keeps_states(&self) -> bool {
        !self.forward.recurrent.is_empty()
    }

    /// Runs one token at the next position. Returns its logits when `want_logits` (a prompt's tokens but
    /// the last need none, and then nothing waits for the GPU).
    pub async fn step(&mut self, token: u32, want_logits: bool) -> Result<Option<Vec<f32>>, Error> {
        let read = match want_logits {
            true => Read::Logits,
            false => Read::Nothing,
        };
        Ok(self.run(Run::Decode(read), &[token]).await?.map(values))
    }

    /// Runs one token at the next position and returns the index of its largest logit (the first of
    /// equals): a greedy step, which reads back 8 bytes (the choice and its chance) rather than the logits.
    pub async fn step_greedy(&mut self, token: u32) -> Result<u32, Error> {
        let read = self.run(Run::Decode(Read::Greedy), &[token]).await?;
        Ok(read.expect("the choice was asked for")[0])
    }

    /// Runs one token at the next position and returns the sampler's candidates after it, as `pick`
    /// asks: the repetition penalty applied, then the k largest logits as (id, logit), largest first
    /// (the smaller id first among equals; non-finite logits are never candidates); with
    /// `log_sum_exp`, also the log of the sum of the penalized row's exponentials. Reads back 8 bytes
    /// a candidate rather than the logits (with the sum, all K_MAX slots and 4 bytes more).
    pub async fn step_candidates(
        &mut self,
        token: u32,
        pick: &crate::sampler::Pick,
        log_sum_exp: bool,
    ) -> Result<Ranked, Error> {
        let read = self.sample.write_pick(&self.gpu, pick, log_sum_exp);
        let words = self.run(Run::Decode(read), &[token]).await?;
        let words = words.expect("the candidates were asked for");
        Ok(read_ranked(bytemuck::cast_slice(&words), read))
    }

    /// Runs `tokens` at the next position (`run_segments`), which they then fill.
    async fn run(&mut self, run: Run<'_>, tokens: &[u32]) -> Result<Option<Vec<u32>>, Error> {
        if self.pos as usize + tokens.len() > self.n_ctx as usize {
            return Err(Error::ContextFull(self.n_ctx));
        }
        let segments = self.segments(0, self.pos, tokens)?;
        let values = self.run_segments(run, &segments).await?;
        self.pos += tokens.len() as u32;
        Ok(values)
    }

    /// Runs `tokens` and returns the logits after the last one: through the prefill plan a chunk per
    /// run where the model has one, the last chunk ending in the logits (`prompt_end`).
    pub async fn prefill(&mut self, tokens: &[u32]) -> Result<Vec<f32>, Error> {
        if tokens.is_empty() {
            return Err(Error::Model("an empty prompt".into()));
        }
        if self.pos as usize + tokens.len() > self.n_ctx as usize {
            return Err(Error::ContextFull(self.n_ctx));
        }
        let (rest, last_run) = tokens.split_at(self.prompt_end(tokens)?);
        self.feed(rest).await?;
        let logits = self.run(Run::Decode(Read::Logits), last_run).await?;
        Ok(values(logits.expect("logits were asked for")))
    }

    /// Where the last run of the prompt `tokens` begins, the run that ends in the logits after
    /// them: their last chunk, whose head gives the logits in the chunk's pass, or their last token
    /// where the model runs one token at a time.
    pub fn prompt_end(&self, tokens: &[u32]) -> Result<usize, Error> {
        let chunk = self.stats.chunk_tokens as usize;
        let runs = inject::prompt_runs(tokens, chunk, self.forward.n_vocab)?;
        Ok(runs.last().copied().unwrap_or(0))
    }

    /// Runs `tokens` into the cache, a chunk per run where the model has a prefill plan, and reads
    /// nothing back.
    pub async fn feed(&mut self, tokens: &[u32]) -> Result<(), Error> {
        match self.forward.prefill.as_ref().map(|p| p.batch) {
            Some(batch) => {
                let starts = inject::prompt_runs(tokens, batch as usize, self.forward.n_vocab)?;
                let ends = starts.iter().skip(1).copied().chain([tokens.len()]);
                for (start, end) in starts.iter().zip(ends) {
                    self.run(Run::Prefill, &tokens[*start..end]).await?;
                }
            }
            None => {
                for &t in tokens {
                    self.step(t, false).await?;
                }
            }
        }
        Ok(())
    }

    /// Runs `tokens` and returns, for each, the log-probability the model gives the token after it:
    /// the next of `tokens`, and `next` after the last. Where the engine was loaded for scoring
    /// (`LoadOptions::scoring`), a chunk per run through the scoring plan, which reads back one number
    /// per token; elsewhere a decode step per token, its logits read back and reduced here.
    pub async fn log_probs(&mut self, tokens: &[u32], next: u32) -> Result<Vec<f64>, Error> {
        let successors = tokens.iter().skip(1).chain([&next]);
        let mut out = Vec::with_capacity(tokens.len());
        match self.forward.score.as_ref().map(|s| s.plan.batch) {
            Some(batch) => {
                for (i, chunk) in tokens.chunks(batch as usize).enumerate() {
                    let end = i * batch as usize + chunk.len();
                    let after = tokens.get(end).copied().unwrap_or(next);
                    let values = self.run(Run::Score { next: after }, chunk).await?;
                    let read = values.expect("a scoring run reads back");
                    out.extend(read.iter().map(|&v| f32::from_bits(v) as f64));
                }
            }
            None => {
                for (&t, &successor) in tokens.iter().zip(successors) {
                    let logits = self.step(t, true).await?.expect("logits were asked for");
                    out.push(crate::ops::log_prob::reference(&logits, successor as usize));
                }
            }
        }
        Ok(out)
    }
}

/// Copies each of `from` into its counterpart in `to`, in submission order with the runs.
fn copy_buffers(gpu: &Gpu, from: &[wgpu::Buffer], to: &[wgpu::Buffer]) {
    let mut enc = gpu.device.create_command_encoder(&Default::default());
    for (a, b) in from.iter().zip(to) {
        enc.copy_buffer_to_buffer(a, 0, b, 0, a.size());
    }
    gpu.queue.submit([enc.finish()]);
}

/// Bytes read back, as the values they hold: one copy, into memory aligned for them.
fn cast<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    bytemuck::pod_collect_to_vec(bytes)
}

/// Words read back, as the values they hold (f32 or u32): the same memory, no copy.
fn values<T: bytemuck::Pod>(words: Vec<u32>) -> Vec<T> {
    bytemuck::cast_vec(words)
}

//! A plan: every dispatch of one run of the model over a few tokens (one when decoding, a chunk of the
//! prompt when reading one), with its pipeline and bind group made once.
//!
//! A plan is described first (`Plan::push`), then `finish` writes every dispatch's parameters into one
//! uniform arena and makes the bind groups. Recording it is then a loop of set/dispatch calls into a
//! single compute pass. What changes from run to run (the position and the tokens) is in the plan's
//! `StepInput`, written before each submit.

use super::{
    head_groups, Adapter, AttentionForm, AttentionShape, Choice, Gpu, GpuError, Kernel,
    MatvecShape, PipelineKey, Recurrence, RecurrenceShape, Tunable, Tuning, XNorm,
    NORM_GAIN_BINDING,
};
use std::sync::Arc;

/// The inputs of one run, as shaders/step.wgsl reads them: { n_tokens, next, tokens[batch] }, each
/// token { id, pos, base, end, turn, place }.
pub struct StepInput {
    pub buffer: wgpu::Buffer,
    /// The most tokens one run takes; every activation buffer of a plan has this many rows.
    pub batch: u32,
}

/// A sequence's tokens in a run: `tokens` at positions pos, pos + 1, ... of the sequence whose
/// position 0 is row `base` of the KV cache.
/// They rotate as `turns` says.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    pub base: u32,
    pub pos: u32,
    pub tokens: &'a [u32],
    pub turns: Turns,
}

impl<'a> Segment<'a> {
    /// Tokens that rotate at their positions.
    pub fn new(base: u32, pos: u32, tokens: &'a [u32]) -> Segment<'a> {
        Segment {
            base,
            pos,
            tokens,
            turns: Turns::Text(pos),
        }
    }
}

/// Where a segment's tokens rotate: each token's `turn` and `place` in shaders/step.wgsl.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turns {
    /// Text, from this position on, one a token.
    Text(u32),
    /// An image's tokens, row by row in a grid `cols` wide: all at `turn`, each turned further by
    /// its row and its column where the model rotates by multimodal RoPE.
    Image { turn: u32, cols: u32 },
}

impl Turns {
    /// The `turn` and `place` of the segment's token `i`.
    fn of(self, i: u32) -> [u32; 2] {
        match self {
            Turns::Text(first) => [first + i, 0],
            Turns::Image { turn, cols } => [turn, ((i / cols) << 16) | (i % cols)],
        }
    }
}

/// Words of a run's header (n_tokens, next) and of each token (id, pos, base, end, turn, place).
const HEADER_WORDS: usize = 2;
const TOKEN_WORDS: usize = 6;

impl StepInput {
    pub fn new(gpu: &Gpu, batch: u32) -> StepInput {
        assert!(batch > 0);
        let words = HEADER_WORDS + TOKEN_WORDS * batch as usize;
        StepInput {
            buffer: super::storage_buffer(gpu, "step", &vec![0u8; 4 * words]),
            batch,
        }
    }

    /// A step input already holding `tokens` at `pos` (a batch of exactly that many).
    pub fn with(gpu: &Gpu, pos: u32, tokens: &[u32]) -> StepInput {
        let step = StepInput::new(gpu, tokens.len() as u32);
        step.write(gpu, pos, tokens);
        step
    }

    /// Sets the next run: `tokens` (at most `batch`) at positions pos, pos + 1, ... of one sequence
    /// at the start of the cache.
    pub fn write(&self, gpu: &Gpu, pos: u32, tokens: &[u32]) {
        self.write_followed(gpu, pos, tokens, 0);
    }

    /// As `write`, with the token that follows the run's last (`next`), for plans that score each
    /// token's successor.
    pub fn write_followed(&self, gpu: &Gpu, pos: u32, tokens: &[u32], next: u32) {
        self.write_segments(gpu, &[Segment::new(0, pos, tokens)], next);
    }

    /// Sets the next run to the tokens of `segments`, one after another in the run's rows.
    pub fn write_segments(&self, gpu: &Gpu, segments: &[Segment], next: u32) {
        let n_tokens: usize = segments.iter().map(|s| s.tokens.len()).sum();
        assert!(n_tokens > 0 && n_tokens <= self.batch as usize);
        let mut words = Vec::with_capacity(HEADER_WORDS + TOKEN_WORDS * n_tokens);
        words.extend_from_slice(&[n_tokens as u32, next]);
        for s in segments {
            let end = s.base + s.pos + s.tokens.len() as u32;
            for (i, (&id, pos)) in s.tokens.iter().zip(s.pos..).enumerate() {
                let [turn, place] = s.turns.of(i as u32);
                words.extend_from_slice(&[id, pos, s.base, end, turn, place]);
            }
        }
        gpu.queue
            .write_buffer(&self.buffer, 0, bytemuck::cast_slice(&words));
    }

    /// Has `enc` copy the word at `from` (a token the GPU chose) into the id of the run's token
    /// `i`, over what `write_segments` wrote there.
    pub fn copy_token(&self, enc: &mut wgpu::CommandEncoder, from: (&wgpu::Buffer, u64), i: usize) {
        let id_at = ((HEADER_WORDS + TOKEN_WORDS * i) * 4) as u64;
        enc.copy_buffer_to_buffer(from.0, from.1, &self.buffer, id_at, 4);
    }
}

/// Parameters of one dispatch, written once into the arena.
pub struct UniformArena {
    bytes: Vec<u8>,
    align: usize,
}

impl UniformArena {
    fn new(align: u32) -> UniformArena {
        UniformArena {
            bytes: Vec::new(),
            align: align.max(16) as usize,
        }
    }

    /// Appends `params` and returns its offset.
    fn push(&mut self, params: &[u8]) -> u64 {
        let offset = self.bytes.len().next_multiple_of(self.align);
        self.bytes.resize(offset, 0);
        self.bytes.extend_from_slice(params);
        // A uniform binding is at least 16 bytes and a multiple of 16.
        self.bytes
            .resize(offset + params.len().next_multiple_of(16).max(16), 0);
        offset as u64
    }
}

/// A dispatch's workgroup counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Groups {
    /// The same in every run.
    Fixed([u32; 3]),
    /// [x, one per `per` of the run's tokens, z]: recorded for the tokens the run has, not for the
    /// plan's batch, so a short chunk (a prompt's last, a short input to embed) launches only the
    /// workgroups it needs. Kernels still stop at `step.n_tokens`; where a driver runs workgroups on
    /// the CPU (lavapipe), each empty one costs nearly what a full one does.
    PerTokens { x: u32, per: u32, z: u32 },
    /// [x, y, one per `per` of the run's tokens], recorded for the run's tokens as `PerTokens` is:
    /// the matvec kernels, which take rows in x and y (`grid`) and the run's tokens in z. A
    /// speculative check of fewer rows than its plan holds launches no empty layer (on lavapipe a
    /// check of 4 rows in a plan of 7 took 369 ms with one, 205-290 ms in a plan of 4).
    TokensInZ { xy: [u32; 2], per: u32 },
}

impl Groups {
    /// [x, one per token of the run, 1].
    pub fn per_token(x: u32) -> Groups {
        Groups::PerTokens { x, per: 1, z: 1 }
    }

    /// The counts for a run of `tokens` tokens.
    pub fn counts(self, tokens: u32) -> [u32; 3] {
        match self {
            Groups::Fixed(counts) => counts,
            Groups::PerTokens { x, per, z } => [x, tokens.div_ceil(per).max(1), z],
            Groups::TokensInZ { xy: [x, y], per } => [x, y, tokens.div_ceil(per).max(1)],
        }
    }
}

impl From<[u32; 3]> for Groups {
    fn from(counts: [u32; 3]) -> Groups {
        Groups::Fixed(counts)
    }
}

/// One dispatch of the plan.
pub struct Dispatch {
    pub key: PipelineKey,
    pub pipeline: Arc<wgpu::ComputePipeline>,
    pub bind_group: wgpu::BindGroup,
    pub workgroups: Groups,
    /// What it binds (the buffers, then its parameters in the plan's arena), to bind them again to
    /// another shape of the same kernel.
    pub buffers: Vec<wgpu::Buffer>,
    params: (u64, u64),
    /// What tuning may change the kernel of: a matvec's shape, a recurrence's.
    pub tunable: Option<Tunable>,
}

impl Dispatch {
    /// The matvec's shape, where the dispatch is a tunable matvec.
    pub fn matvec(&self) -> Option<MatvecShape> {
        self.tunable.and_then(|t| t.matvec())
    }
}

struct Pending {
    key: PipelineKey,
    buffers: Vec<wgpu::Buffer>,
    params_offset: u64,
    params_len: u64,
    workgroups: Groups,
    tunable: Option<Tunable>,
}

/// The most tokens a plan's runs may hold and still be a step rather than a prompt's chunk: a decode
/// step of up to eight sequences, or a speculative check. A step's products go through the matvec
/// kernel, four tokens to a layer of workgroups, each weight read once a layer, rather than the
/// tiled matmul (each read once, but with a tile's arithmetic): on lavapipe (SmolLM2) a step of 4
/// costs 2.0x a one-token step so, 2.1x tiled; a step of 8 costs 3.2-3.7x in two layers of four,
/// 5-6.5x tiled. Its attention takes a token a workgroup: its sequences lie apart in the cache.
pub const STEP_TOKENS_MAX: u32 = 8;

/// The tokens a step's pair product takes to a layer of workgroups (a kernel of eight tokens a layer
/// aside). A step of up to this many and a step of more run its products in kernels tuned apart
/// (`MatvecShape::in_step`), each in a plan of its own (`Parallel::steps`).
pub const PAIR_TOKENS: u32 = 4;

/// The dispatches of one run, in order.
pub struct Plan {
    /// The run's inputs, bound by the kernels that need the position or the tokens.
    pub step: wgpu::Buffer,
    /// Tokens per run at most: the rows of the plan's activation buffers.
    pub batch: u32,
    pending: Vec<Pending>,
    arena: UniformArena,
    pub dispatches: Vec<Dispatch>,
    /// Bytes of weights the plan reads once per run.
    pub weight_bytes: u64,
    /// Where each layer's dispatches begin, and where the last one ends.
    layer_bounds: Vec<usize>,
    /// What kind of layer each is, where the model says (`begin_layer`).
    layer_kinds: Vec<&'static str>,
    arena_buffer: Option<wgpu::Buffer>,
    /// The kernel shapes of this plan's dispatches.
    tuning: Arc<Tuning>,
    /// Whether products that read a norm of x norm it in their own kernels (`Gpu::fuses_norms`).
    pub fuses_norms: bool,
    /// What kernels unless tuned depend on, of the adapter: its workgroup memory and whether it runs
    /// workgroups on the CPU.
    pub adapter: Adapter,
    /// Its runs are steps (`is_step`) whatever their tokens (`Plan::new_step`).
    steps: bool,
}

impl Plan {
    /// A plan for runs of at most `batch` tokens (at most the step input's).
    pub fn new(gpu: &Gpu, step: &StepInput, batch: u32) -> Plan {
        assert!(batch > 0 && batch <= step.batch);
        Plan {
            step: step.buffer.clone(),
            batch,
            pending: Vec::new(),
            arena: UniformArena::new(gpu.limits.min_uniform_buffer_offset_alignment),
            dispatches: Vec::new(),
            weight_bytes: 0,
            layer_bounds: Vec::new(),
            layer_kinds: Vec::new(),
            arena_buffer: None,
            tuning: gpu.usable(gpu.tuning()),
            fuses_norms: gpu.fuses_norms(),
            adapter: gpu.adapter(),
            steps: false,
        }
    }

    /// As `new`, for runs that are steps however many tokens they hold (`is_step`): a parallel step
    /// of more rows than a step's few (a server's slots that check drafts), whose products still
    /// take tiles where the tokens are more than `STEP_TOKENS_MAX`.
    pub fn new_step(gpu: &Gpu, step: &StepInput, batch: u32) -> Plan {
        Plan {
            steps: true,
            ..Plan::new(gpu, step, batch)
        }
    }

    /// Adds a dispatch. `buffers` bind to 0..n in order and `params` (a uniform) binds to n.
    pub fn push(
        &mut self,
        key: PipelineKey,
        buffers: &[&wgpu::Buffer],
        params: &[u8],
        workgroups: impl Into<Groups>,
    ) {
        self.push_shaped(key, buffers, params, workgroups.into(), None);
    }

    /// Adds a matvec dispatch (shaders/matvec.wgsl or matvec_pairs.wgsl) of this shape, with the
    /// kernel shape the plan's tuning gives it, for each token of the run.
    pub fn push_matvec(&mut self, shape: MatvecShape, buffers: &[&wgpu::Buffer], params: &[u8]) {
        // A step of several tokens (`few_tokens`: `ops::matvec` sends those here) takes them four to a
        // layer of workgroups, with winners for plans of up to four rows and others for more.
        let shape = match self.batch > 1 && matches!(shape.kernel, Kernel::MatvecPairs(..)) {
            true => shape.in_step(self.batch),
            false => shape,
        };
        let tunable = Tunable::Matvec(shape);
        let choice = self.tuning.choice(&tunable, self.adapter);
        let (key, workgroups) = self.shaped(&tunable, choice);
        self.push_shaped(key, buffers, params, workgroups, Some(tunable));
    }

    /// The form of a recurrence of this shape: token by token in a run of a step's few tokens
    /// (`few_tokens`), in one of more the form the plan's tuning gives it.
    pub fn recurrence(&self, shape: &RecurrenceShape) -> Recurrence {
        match self.few_tokens() {
            true => Recurrence::Tokens,
            false => self.tuning.recurrence(shape, self.adapter),
        }
    }

    /// The form of a plan's attention of this shape: the plan's tuning's.
    pub fn attention(&self, shape: &AttentionShape) -> AttentionForm {
        self.tuning.attention(shape, self.adapter)
    }

    /// Adds a run's attention in tiles of keys (shaders/attention_tiled.wgsl or
    /// attention_rows.wgsl), or a step's split (attention_split.wgsl or attention_split_lanes.wgsl),
    /// of this shape in `form`; where `tuned`, tuning may change the form.
    pub fn push_attention(
        &mut self,
        (shape, tuned): (AttentionShape, bool),
        form: AttentionForm,
        buffers: &[&wgpu::Buffer],
        params: &[u8],
    ) {
        let tunable = Tunable::Attention(shape);
        let (key, workgroups) = self.shaped(&tunable, Choice::Attention(form));
        self.push_shaped(key, buffers, params, workgroups, tuned.then_some(tunable));
    }

    /// Adds a Gated DeltaNet recurrence (shaders/delta_net*.wgsl) of this shape in `form`; in a
    /// prompt's chunk, tuning may change the form.
    pub fn push_recurrence(
        &mut self,
        shape: RecurrenceShape,
        form: Recurrence,
        buffers: &[&wgpu::Buffer],
        params: &[u8],
    ) {
        let tunable = Tunable::Recurrence(shape);
        let (key, workgroups) = self.shaped(&tunable, Choice::Recurrence(form));
        let tunable = (!self.few_tokens()).then_some(tunable);
        self.push_shaped(key, buffers, params, workgroups, tunable);
    }

    /// The kernel and workgroups of a tunable in one of its kernels.
    fn shaped(&self, tunable: &Tunable, choice: Choice) -> (PipelineKey, Groups) {
        match (tunable, choice) {
            (Tunable::Matvec(shape), Choice::Matvec(kernel)) => {
                let key = PipelineKey::matvec(shape, kernel);
                (key, matvec_workgroups(shape, &key))
            }
            (Tunable::Recurrence(shape), Choice::Recurrence(form)) => {
                assert!(
                    shape.fits(form, self.adapter.workgroup_bytes),
                    "{form:?} for {shape:?}"
                );
                let key = PipelineKey::recurrence(shape.dim, form);
                (key, Groups::Fixed([shape.heads, 1, 1]))
            }
            (Tunable::Attention(shape), Choice::Attention(form)) => {
                assert!(
                    shape.fits(form, self.adapter.workgroup_bytes),
                    "{form:?} for {shape:?}"
                );
                let key = PipelineKey::attention(shape, form);
                let workgroups = match shape.splits {
                    // On MLA's matrix form, a workgroup per `size` of a token's heads and split.
                    Some(splits) if matches!(form, AttentionForm::LatentMatrix { .. }) => {
                        Groups::PerTokens {
                            x: shape
                                .heads
                                .div_ceil(key.tokens.expect("a matrix form's rows")),
                            per: 1,
                            z: splits,
                        }
                    }
                    // A split workgroup per group of heads, token and split.
                    Some(splits) => Groups::PerTokens {
                        x: head_groups(shape.heads, shape.kv_heads),
                        per: 1,
                        z: splits,
                    },
                    // MLA's streaming form: a workgroup per group of heads and its tokens.
                    None if matches!(form, AttentionForm::Latent { .. }) => Groups::PerTokens {
                        x: head_groups(shape.heads, 1),
                        per: key.tokens.unwrap_or(1),
                        z: 1,
                    },
                    // A workgroup per head and its queries; on MLA's matrix form, workgroup
                    // (x, y) takes rows (token, head) of the run from (y heads + x) size.
                    None => Groups::PerTokens {
                        x: shape.heads,
                        per: key.tokens.expect("an attention's queries a workgroup"),
                        z: 1,
                    },
                };
                (key, workgroups)
            }
            _ => panic!("{choice:?} is not a kernel of {tunable:?}"),
        }
    }

    fn push_shaped(
        &mut self,
        key: PipelineKey,
        buffers: &[&wgpu::Buffer],
        params: &[u8],
        workgroups: Groups,
        tunable: Option<Tunable>,
    ) {
        let params_offset = self.arena.push(params);
        self.pending.push(Pending {
            key,
            buffers: buffers.iter().map(|&b| b.clone()).collect(),
            params_offset,
            params_len: params.len().next_multiple_of(16).max(16) as u64,
            workgroups,
            tunable,
        });
    }

    /// Marks where a layer's dispatches begin; after the last layer, where it ends.
    pub fn layer_boundary(&mut self) {
        self.layer_bounds.push(self.dispatch_count());
    }

    /// Whether the plan's runs are steps, each token at its own sequence's place (a decode step, a
    /// parallel step, a speculative check), not a prompt's chunk: its attention takes each
    /// sequence's tokens apart rather than walking every key a chunk's queries see together, which
    /// for tokens of several sequences spans the cache between them. Plans of a step's few tokens
    /// (`few_tokens`) are steps, and parallel plans of more (`new_step`).
    pub fn is_step(&self) -> bool {
        self.steps || self.few_tokens()
    }

    /// Whether the plan's runs hold a step's few tokens at most (`STEP_TOKENS_MAX`): its products
    /// go through the matvec kernel, a recurrence token by token; more go in tiles, in chunks.
    pub fn few_tokens(&self) -> bool {
        self.batch <= STEP_TOKENS_MAX
    }

    /// Dispatches pushed so far, finished or not.
    pub fn dispatch_count(&self) -> usize {
        self.pending.len() + self.dispatches.len()
    }

    /// Marks where a layer of this kind begins (see `layer_boundary`).
    pub fn begin_layer(&mut self, kind: &'static str) {
        self.layer_boundary();
        self.layer_kinds.push(kind);
    }

    /// The kind of layer dispatch `i` belongs to, where the model named its layers' kinds.
    pub fn layer_kind_of(&self, i: usize) -> Option<&'static str> {
        let layer = self.layer_bounds.iter().rposition(|&start| start <= i)?;
        match layer + 1 < self.layer_bounds.len() {
            true => self.layer_kinds.get(layer).copied(),
            false => None, // past the last layer: the head
        }
    }

    /// Whether a layer begins at dispatch `i`.
    pub fn layer_starts(&self, i: usize) -> bool {
        let starts = self.layer_bounds.len().saturating_sub(1);
        self.layer_bounds[..starts].contains(&i)
    }

    /// Dispatches in each layer, as marked.
    pub fn dispatches_per_layer(&self) -> Vec<u32> {
        self.layer_bounds
            .windows(2)
            .map(|w| (w[1] - w[0]) as u32)
            .collect()
    }

    /// Makes the arena, the pipelines and the bind groups.
    pub async fn finish(&mut self, gpu: &Gpu) -> Result<(), GpuError> {
        let arena = super::buffers::uniform_buffer(gpu, "params", &self.arena.bytes);
        let keys: Vec<PipelineKey> = self.pending.iter().map(|p| p.key).collect();
        if let Some((_, refused)) = gpu.build_pipelines(&keys).await.into_iter().next() {
            return Err(refused);
        }
        let pending = std::mem::take(&mut self.pending);
        let dispatches = gpu
            .checked("building the plan", || {
                pending
                    .into_iter()
                    .map(|p| {
                        let pipeline = gpu.pipelines.get(&gpu.device, p.key);
                        let params = (p.params_offset, p.params_len);
                        let bind_group =
                            bind(gpu, (&p.key, &pipeline), &p.buffers, (&arena, params));
                        Dispatch {
                            key: p.key,
                            pipeline,
                            bind_group,
                            workgroups: p.workgroups,
                            buffers: p.buffers,
                            params,
                            tunable: p.tunable,
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .await?;
        self.dispatches.extend(dispatches);
        self.arena_buffer = Some(arena);
        Ok(())
    }

    /// Gives every tunable dispatch the kernel `tuning` names for it (a new pipeline and bind group
    /// where that changed), as far as the GPU lets plans use it (`Gpu::usable`); plans made from now
    /// on take the tuning from the Gpu.
    pub fn retune(&mut self, gpu: &Gpu, tuning: &Tuning) {
        let tuning = gpu.usable(Arc::new(tuning.clone()));
        let mut dispatches = std::mem::take(&mut self.dispatches);
        for d in &mut dispatches {
            let Some(tunable) = d.tunable else { continue };
            let choice = tuning.choice(&tunable, self.adapter);
            let (key, workgroups) = self.shaped(&tunable, choice);
            if d.key != key {
                let (pipeline, bind_group, _) = self.reshaped(gpu, d, (choice, self.batch));
                d.key = key;
                (d.pipeline, d.bind_group) = (pipeline, bind_group);
                d.workgroups = workgroups;
            }
        }
        self.dispatches = dispatches;
        self.tuning = tuning;
    }

    /// Retunes the plan to `tuning` and submits a run of its whole batch, the kernels' builds and the
    /// run under `Gpu::checked`: an error where the device refuses a kernel or errs. For the checks
    /// that run candidate kernels once before the tuner may offer them (subgroups, matrix cores).
    pub async fn run_checked(
        &mut self,
        gpu: &Gpu,
        tuning: &Tuning,
        what: &str,
    ) -> Result<(), GpuError> {
        gpu.checked(what, || {
            self.retune(gpu, tuning);
            let mut enc = gpu.device.create_command_encoder(&Default::default());
            self.record(&mut enc.begin_compute_pass(&Default::default()), self.batch);
            gpu.queue.submit([enc.finish()]);
        })
        .await
    }

    /// The pipeline key of a tunable dispatch of this plan with another of its kernels.
    pub fn key_of(&self, tunable: &Tunable, choice: Choice) -> PipelineKey {
        self.shaped(tunable, choice).0
    }

    /// `d` (a tunable dispatch) as it would run with another of its kernels: its pipeline, bind
    /// group and workgroup counts for a run of `tokens` (at most the plan's batch). For timing
    /// candidates.
    pub fn reshaped(
        &self,
        gpu: &Gpu,
        d: &Dispatch,
        (choice, tokens): (Choice, u32),
    ) -> (Arc<wgpu::ComputePipeline>, wgpu::BindGroup, [u32; 3]) {
        let tunable = d.tunable.expect("a tunable dispatch");
        let (key, workgroups) = self.shaped(&tunable, choice);
        let pipeline = gpu.pipelines.get(&gpu.device, key);
        let arena = self.arena_buffer.as_ref().expect("a finished plan");
        let bind_group = bind(gpu, (&key, &pipeline), &d.buffers, (arena, d.params));
        (pipeline, bind_group, workgroups.counts(tokens))
    }

    /// Records every dispatch into `pass`, for a run of `tokens` tokens (at most `batch`).
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, tokens: u32) {
        self.record_until(pass, tokens, self.dispatches.len());
    }

    /// Records the dispatches before dispatch `end` into `pass`, as `record` does.
    pub fn record_until(&self, pass: &mut wgpu::ComputePass<'_>, tokens: u32, end: usize) {
        assert!(tokens >= 1 && tokens <= self.batch);
        for d in &self.dispatches[..end] {
            pass.set_pipeline(&d.pipeline);
            pass.set_bind_group(0, &d.bind_group, &[]);
            let [x, y, z] = d.workgroups.counts(tokens);
            pass.dispatch_workgroups(x, y, z);
        }
    }
}

/// Binds `buffers` to 0..n and the parameters (offset and length in `arena`) to n; where the
/// kernel norms its x, its last buffer is the norm's gain, which binds to `NORM_GAIN_BINDING`.
fn bind(
    gpu: &Gpu,
    (key, pipeline): (&PipelineKey, &wgpu::ComputePipeline),
    buffers: &[wgpu::Buffer],
    (arena, (offset, len)): (&wgpu::Buffer, (u64, u64)),
) -> wgpu::BindGroup {
    let (buffers, gain) = match key.kernel.x_norm() {
        XNorm::Rms(_) => {
            let (gain, rest) = buffers.split_last().expect("a norm's gain");
            (rest, Some(gain))
        }
        _ => (buffers, None),
    };
    let mut entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    if let Some(gain) = gain {
        entries.push(wgpu::BindGroupEntry {
            binding: NORM_GAIN_BINDING,
            resource: gain.as_entire_binding(),
        });
    }
    entries.push(wgpu::BindGroupEntry {
        binding: buffers.len() as u32,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: arena,
            offset,
            size: wgpu::BufferSize::new(len),
        }),
    });
    gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}

/// A matvec's workgroups: one per WG / TPR row slots, and a layer of them per token. A tile's: one per
/// tile of rows by tokens (by items of an expert's list, which has at most the run's tokens), a layer
/// of them per matrix (expert).
fn matvec_workgroups(shape: &MatvecShape, key: &PipelineKey) -> Groups {
    if let Some(tile) = key.tile() {
        return Groups::PerTokens {
            x: shape.rows.div_ceil(tile.rows),
            per: tile.tokens,
            z: shape.matrices,
        };
    }
    let slots = key.workgroup / key.threads_per_row.expect("a matvec key");
    let [x, y, _] = grid(shape.rows.div_ceil(key.rows_per_slot() * slots));
    let per = key.tokens.unwrap_or(1);
    Groups::TokensInZ { xy: [x, y], per }
}

/// Workgroup counts for `n` workgroups, folded into a second dimension past the 65535 limit.
pub fn grid(n: u32) -> [u32; 3] {
    const MAX: u32 = 65535;
    if n <= MAX {
        [n, 1, 1]
    } else {
        [MAX, n.div_ceil(MAX), 1]
    }
}

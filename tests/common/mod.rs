//! What the integration tests share: the GPU (required in CI), seeded random data, error measures.
#![allow(dead_code)]

pub mod attention;
pub mod edit_gguf;
pub mod fidelity;
pub mod quant_goldens;
pub mod random_model;
pub mod speculation;
pub mod vision;
pub mod watched_source;

use pollster::FutureExt as _;
use std::sync::Arc;
use wick::gguf::{GgmlType, Header, MemorySource, TensorInfo};
use wick::gpu::{storage_buffer, Gpu, GpuTensor, PipelineKey, Plan, StepInput, Tuning};
use wick::quant;

/// Whether only the kernels on matrix cores are to be checked (`WICK_MATRIX_CORES_ONLY=1`):
/// scripts/test-matrix-cores.sh runs the product tests again on a lavapipe that has them, one
/// thread, where every other candidate was checked by the run before on this machine's own.
pub fn matrix_cores_only() -> bool {
    std::env::var("WICK_MATRIX_CORES_ONLY").is_ok_and(|v| v == "1")
}

/// The GPU, or None (with the reason printed) where there is none. In CI a missing adapter fails.
pub fn gpu() -> Option<Arc<Gpu>> {
    match pollster::block_on(Gpu::new()) {
        Ok(g) => Some(g),
        Err(e) if std::env::var("CI").is_err() => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("CI needs a GPU adapter (lavapipe): {e}"),
    }
}

/// `gpu()` with each RMSNorm done in the kernel of the product that reads it (`Gpu::fuses_norms`),
/// a GPU's default, which a CPU-backed adapter such as lavapipe does not take unless told.
pub fn gpu_with_norms_fused() -> Option<Arc<Gpu>> {
    let gpu = gpu()?;
    assert!(
        gpu.set_fuses_norms(true),
        "this adapter cannot norm x on the way in"
    );
    Some(gpu)
}

/// The tiny random-weight llama with a ChatML template (tests/goldens/make_random_llama_chat.py): it
/// loads and answers in milliseconds, for tests of behaviour rather than of numbers.
pub fn tiny_chat_session(gpu: Arc<Gpu>, n_ctx: u32) -> Result<wick::session::Session, wick::Error> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/random-llama-chat.gguf");
    let source = wick::gguf::FileSource::open(path).unwrap();
    let options = options(n_ctx);
    wick::session::Session::load(gpu, &source, &options, &mut |_, _| {}).block_on()
}

/// `wick perplexity`'s score of tests/data/perplexity.txt on `source` at a context (chunk) of `n_ctx`,
/// over at most `chunks` chunks (all: None), loaded for batched scoring as the command loads.
pub fn text_perplexity(
    gpu: Arc<Gpu>,
    source: &dyn wick::gguf::ByteSource,
    n_ctx: u32,
    chunks: Option<usize>,
) -> wick::perplexity::Perplexity {
    let options = wick::engine::LoadOptions {
        n_ctx,
        scoring: true,
        ..Default::default()
    };
    let mut session = wick::session::Session::load(gpu, source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    let text = include_str!("../data/perplexity.txt");
    let engine = &mut session.engine;
    wick::perplexity::perplexity(engine, &session.tokenizer, text, chunks, &mut |_, _| {})
        .block_on()
        .unwrap()
}

/// Load options for a context of `n_ctx` positions, the rest as a user gets them.
pub fn options(n_ctx: u32) -> wick::engine::LoadOptions {
    wick::engine::LoadOptions {
        n_ctx,
        ..Default::default()
    }
}

/// A plan for one run of `tokens` at positions pos, pos + 1, ... (kernels that read no token get any).
pub fn plan_at(gpu: &Gpu, pos: u32, tokens: &[u32]) -> Plan {
    Plan::new(gpu, &StepInput::with(gpu, pos, tokens), tokens.len() as u32)
}

/// A plan for one token at position 0.
pub fn one_token_plan(gpu: &Gpu) -> Plan {
    plan_at(gpu, 0, &[0])
}

/// A greedy sampler.
pub fn greedy() -> wick::sampler::Sampler {
    wick::sampler::Sampler::new(wick::sampler::SamplerConfig::greedy())
}

/// After `prompt`, a check of `tokens` (`Engine::check`: one pass of the parallel plan, a row each)
/// in an engine from `load` gives each row the logits that the same tokens give as decode steps one
/// after the other in another: returns the largest difference of any logit, and the dispatches of
/// the check and of the same check at position 0 (which tell the plans apart: deep into a context
/// each attention layer's split adds a merge).
pub fn check_against_steps(
    load: impl Fn() -> wick::engine::Engine,
    prompt: &[u32],
    tokens: &[u32],
) -> (f32, [u64; 2]) {
    use wick::sampler::{SequenceStep, Want};
    let wants = vec![Want::Logits; tokens.len()];
    let check_dispatches = |engine: &mut wick::engine::Engine| {
        let before = engine.stats.totals.dispatches;
        let rows = engine.check(tokens, &wants).block_on().unwrap();
        (rows, engine.stats.totals.dispatches - before)
    };
    let mut checked = load();
    let (_, at_start) = check_dispatches(&mut checked);
    checked.keep_checked(0).block_on().unwrap();
    checked.prefill(prompt).block_on().unwrap();
    let (rows, deep) = check_dispatches(&mut checked);
    let mut stepped = load();
    stepped.prefill(prompt).block_on().unwrap();
    let mut diff = 0f32;
    for (&token, row) in tokens.iter().zip(rows) {
        let SequenceStep::Logits(got) = row else {
            panic!("a check's row without its logits")
        };
        let want = stepped.step(token, true).block_on().unwrap().unwrap();
        let row_diff = (got.iter().zip(&want)).map(|(a, b)| (a - b).abs());
        diff = row_diff.fold(diff, f32::max);
    }
    (diff, [deep, at_start])
}

/// The default model, which `scripts/fetch-model.sh` puts in models/.
pub fn model_path() -> std::path::PathBuf {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        p.exists(),
        "{} is missing: run scripts/fetch-model.sh",
        p.display()
    );
    p
}

/// The tokenizer of a GGUF file (its header alone is read).
pub fn tokenizer_of(path: &std::path::Path) -> wick::tokenizer::Tokenizer {
    let source = wick::gguf::FileSource::open(path)
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/fetch-model.sh all)", path.display()));
    let header = wick::gguf::read_header(&source).block_on().unwrap();
    wick::tokenizer::Tokenizer::from_gguf(&header).unwrap()
}

/// Whether `grammar` allows each of `ids` in turn, as a constrained reply's masks would (the last
/// may be an end of generation, allowed where the grammar can end).
pub fn grammar_takes(
    vocabulary: &wick::grammar::Vocabulary,
    tokenizer: &wick::tokenizer::Tokenizer,
    grammar: &wick::grammar::Grammar,
    ids: &[u32],
) -> bool {
    use wick::grammar::Constraint;
    let mut constraint = Constraint::new(vocabulary, tokenizer, grammar).unwrap();
    let n_vocab = tokenizer.vocab_size() as u32;
    ids.iter().all(|&id| {
        let bits = constraint.allowed_bits(n_vocab).unwrap();
        Constraint::allows(&bits, id) && (constraint.is_finished() || constraint.accept(id).is_ok())
    })
}

/// xorshift64*: seeded, reproducible, no dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [-1, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    pub fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }
}

/// Normalized mean squared error of `got` against `want`.
pub fn nmse(got: &[f32], want: &[f32]) -> f64 {
    assert_eq!(got.len(), want.len());
    let err: f64 = got
        .iter()
        .zip(want)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum();
    let norm: f64 = want.iter().map(|b| (*b as f64).powi(2)).sum();
    err / norm.max(1e-30)
}

/// x as the products on 8-bit x see it (shaders/row_dot_q8.wgsl), written here from its definition:
/// each 32 values scaled by d = max |x| / 127 and rounded to whole numbers (ties to even), q d.
pub fn q8_rounded(x: &[f32]) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for block in x.chunks(32) {
        let d = block.iter().fold(0f32, |m, v| m.max(v.abs())) / 127.0;
        let inv = if d > 0.0 { 1.0 / d } else { 0.0 };
        out.extend(block.iter().map(|v| (v * inv).round_ties_even() * d));
    }
    out
}

/// The nmse a product on 8-bit x may have against the CPU's product of `q8_rounded` x. The GPU's 1 / d
/// may differ from the CPU's in its last bits and round a value near a half the other way, moving x
/// by d, its block's largest value / 127: for random rows of 736 an nmse near 2.5e-7 a value so
/// moved, where x left unrounded misses by about 1.1e-5. This lets a dozen values round the other way.
pub const Q8_NMSE: f64 = 3e-6;

/// Random matrices packed as their types, one after the other in an in-memory file (tensors "t0",
/// "t1", ...), for the uploads that take several.
/// A matrix as blocks of its type and the weights they hold.
pub struct PackedMatrix {
    pub ty: GgmlType,
    pub rows: u32,
    pub cols: u32,
    pub bytes: Vec<u8>,
    pub deq: Vec<f32>,
}

pub struct RandomFile {
    pub header: Header,
    pub source: MemorySource,
    /// Each matrix dequantized: the weights the GPU should see.
    pub deq: Vec<Vec<f32>>,
}

impl RandomFile {
    /// Matrices of (type, rows, cols), of seeded random weights quantized by Wick's CPU quantizer.
    pub fn new(matrices: &[(GgmlType, u32, u32)], rng: &mut Rng) -> RandomFile {
        let packed = matrices
            .iter()
            .map(|&(ty, rows, cols)| {
                let w = rng.vec((rows * cols) as usize);
                let mut bytes = Vec::new();
                quant::quantize(ty, &w, &mut bytes).unwrap();
                let mut deq = vec![0f32; w.len()];
                quant::dequantize(ty, &bytes, &mut deq).unwrap();
                PackedMatrix {
                    ty,
                    rows,
                    cols,
                    bytes,
                    deq,
                }
            })
            .collect();
        RandomFile::of_matrices(packed)
    }

    /// The given matrices, laid out as a file's tensors (`t0`, `t1`, ...) 32-byte aligned.
    pub fn of_matrices(matrices: Vec<PackedMatrix>) -> RandomFile {
        let (mut bytes, mut tensors, mut deq) = (Vec::new(), Vec::new(), Vec::new());
        for (i, m) in matrices.into_iter().enumerate() {
            tensors.push(TensorInfo {
                name: format!("t{i}"),
                dims: vec![m.cols as u64, m.rows as u64],
                ty: m.ty,
                offset: bytes.len() as u64,
            });
            bytes.extend_from_slice(&m.bytes);
            bytes.resize(bytes.len().next_multiple_of(32), 0);
            deq.push(m.deq);
        }
        let header = Header {
            version: 3,
            metadata: vec![],
            tensors,
            data_offset: 0,
            alignment: 32,
            file_len: bytes.len() as u64,
        };
        let source = MemorySource {
            bytes,
            name: "random".into(),
        };
        RandomFile {
            header,
            source,
            deq,
        }
    }

    pub fn info(&self, i: usize) -> &TensorInfo {
        &self.header.tensors[i]
    }
}

/// Packs a random (rows, cols) matrix as `ty` and uploads it in parts of at most `max_part` bytes.
/// Returns the GPU tensor and the dequantized weights the GPU should see.
pub fn packed(
    gpu: &Gpu,
    ty: GgmlType,
    rows: u32,
    cols: u32,
    max_part: u64,
    rng: &mut Rng,
) -> (GpuTensor, Vec<f32>) {
    let mut f = RandomFile::new(&[(ty, rows, cols)], rng);
    let t = GpuTensor::upload(gpu, &f.header, &f.source, f.info(0), max_part, &mut |_| {})
        .block_on()
        .unwrap();
    (t, f.deq.remove(0))
}

/// Finishes and submits `plan`. Where the GPU's tuning names kernel shapes that plans may use now
/// (`Gpu::usable`: a check of candidates, each given with `Gpu::set_tuning`), as `run_tuned` with
/// those.
pub fn run(gpu: &Gpu, mut plan: Plan) {
    let tuning = gpu.usable(gpu.tuning());
    if !tuning.matvec.is_empty() {
        return run_tuned(gpu, plan, &tuning);
    }
    plan.finish(gpu).block_on().unwrap();
    submit(gpu, &plan);
}

/// `run`, having asserted that the plan runs each of its products whose shape `tuning` names in the
/// kernel it gives, and that it names at least one: a check of a candidate that the plan never ran
/// would pass whatever the candidate does.
pub fn run_tuned(gpu: &Gpu, mut plan: Plan, tuning: &Tuning) {
    plan.finish(gpu).block_on().unwrap();
    let mut tuned = 0;
    for d in &plan.dispatches {
        let Some(shape) = d.matvec() else { continue };
        if let Some(&kernel) = tuning.matvec.get(&shape.key()) {
            assert_eq!(
                d.key,
                PipelineKey::matvec(&shape, kernel),
                "{}",
                shape.key()
            );
            tuned += 1;
        }
    }
    let shapes: Vec<String> = (plan.dispatches.iter())
        .filter_map(|d| d.matvec().map(|shape| shape.key()))
        .collect();
    let named: Vec<&String> = tuning.matvec.keys().collect();
    assert!(
        tuned > 0,
        "no product of the plan has a shape the tuning names: the plan's {shapes:?}, named {named:?}"
    );
    submit(gpu, &plan);
}

/// Records a finished plan whole in one pass, and submits it.
pub fn submit(gpu: &Gpu, plan: &Plan) {
    let mut enc = gpu.device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        plan.record(&mut pass, plan.batch);
    }
    gpu.queue.submit([enc.finish()]);
}

pub fn f32_buffer(gpu: &Gpu, data: &[f32]) -> wgpu::Buffer {
    storage_buffer(gpu, "data", bytemuck::cast_slice(data))
}

/// Slots 0..n each begun on its prompt of `prompts`, their prompts read together a chunk at a time
/// (as a server reads them): the token each slot's first step runs, and how many runs the prompts
/// took.
pub fn begin_slots(
    slots: &mut wick::slots::Slots,
    engine: &mut wick::engine::Engine,
    prompts: &[Vec<u32>],
) -> (Vec<u32>, usize) {
    let first: Vec<u32> = (prompts.iter().enumerate())
        .map(|(i, p)| slots.begin(i, p).unwrap().0)
        .collect();
    let mut runs = 0;
    loop {
        let reading: Vec<usize> = (0..prompts.len()).filter(|&i| slots.reading(i)).collect();
        if reading.is_empty() {
            return (first, runs);
        }
        slots.read_chunks(engine, &reading).block_on().unwrap();
        runs += 1;
    }
}

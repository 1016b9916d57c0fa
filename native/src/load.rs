//! Opening a model: the file, the GPU, and a progress bar while the weights stream in.

use crate::http_source::{is_url, HttpSource};
use anyhow::{anyhow, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use pollster::FutureExt as _;
use std::sync::Arc;
use wick::engine::LoadOptions;
use wick::gguf::{ByteSource, FileSource};
use wick::gpu::Gpu;
use wick::session::Session;

/// The model used when -m is not given; `scripts/fetch-model.sh` puts it there.
pub const DEFAULT_MODEL: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

/// The model and its context.
#[derive(Args, Clone)]
pub struct ModelArgs {
    /// A GGUF model: a path, or an http(s) URL read by range requests
    /// [default: models/SmolLM2-135M-Instruct.Q4_1.gguf]
    #[arg(short = 'm', long = "model")]
    pub model: Option<String>,
    /// Context size in tokens (capped at the model's training context)
    #[arg(short = 'c', long = "ctx-size", default_value_t = 4096)]
    pub ctx_size: u32,
    /// Prompt tokens per GPU run (1: one at a time) [default: 512 on GPUs, 64 where the adapter runs
    /// on the CPU]
    #[arg(short = 'b', long = "batch-size")]
    pub batch_size: Option<u32>,
    /// How embeddings pool the tokens' states: mean, cls or last [default: as the file says; a
    /// chat model's file says none, and makes no embeddings unless this names one]
    #[arg(long = "pooling", value_parser = parse_pooling)]
    pub pooling: Option<wick::embeddings::Pooling>,
    /// How the KV cache holds keys and values: f32 (exact), or f16 (half the memory and the bytes
    /// attention reads, as llama.cpp's default; MLA's cache stays f32) [default: f16 on GPUs, f32
    /// for CPU-backed adapters; perplexity: f32]
    #[arg(long = "cache-type", value_enum)]
    pub cache_type: Option<CacheType>,
}

/// `--cache-type`'s values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheType {
    F32,
    F16,
}

impl CacheType {
    pub fn kv(self) -> wick::gpu::KvType {
        match self {
            CacheType::F32 => wick::gpu::KvType::F32,
            CacheType::F16 => wick::gpu::KvType::F16,
        }
    }
}

fn parse_pooling(name: &str) -> Result<wick::embeddings::Pooling, String> {
    wick::embeddings::Pooling::from_name(name)
        .ok_or_else(|| format!("{name:?} is not a pooling (mean, cls or last)"))
}

/// The model's bytes: a local file, or an http(s) URL read by range requests.
pub fn open_source(model: &Option<String>) -> Result<Box<dyn ByteSource>> {
    let path = model.as_deref().unwrap_or(DEFAULT_MODEL);
    if is_url(path) {
        return Ok(Box::new(HttpSource::open(path)?));
    }
    let hint = if model.is_none() {
        " (the default model: run scripts/fetch-model.sh to fetch it)"
    } else {
        ""
    };
    // The error names the path.
    let file = FileSource::open(path).map_err(|e| anyhow!("cannot open {e}{hint}"))?;
    Ok(Box::new(file))
}

/// The GPU, with the kernel shapes tuning kept for it.
pub fn gpu() -> Result<Arc<Gpu>> {
    gpu_with(|_| Ok(()))
}

/// The GPU as `setup` sets it (what plans may round: tuning is kept apart by it), with the kernel
/// shapes tuning kept for it so set.
pub fn gpu_with(setup: impl FnOnce(&Gpu) -> Result<()>) -> Result<Arc<Gpu>> {
    let gpu = pollster::block_on(Gpu::new())?;
    setup(&gpu)?;
    let tuned = crate::tuning_file::apply_stored(&gpu);
    match tuned {
        0 => eprintln!("wick: GPU {}", gpu.describe()),
        n => eprintln!("wick: GPU {} ({n} kernel shapes tuned)", gpu.describe()),
    }
    Ok(gpu)
}

/// A progress bar over bytes, drawn on stderr (hidden when stderr is not a terminal).
pub fn progress_bar(what: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

/// Loads the model `args` names with the context, batch and pooling they say (the batch `options`
/// gives where they say none), the rest of `options` as given.
pub fn session(args: &ModelArgs, options: LoadOptions) -> Result<Session> {
    let source = open_source(&args.model)?;
    session_on(gpu()?, source, args, options)
}

/// `session` from the model's bytes on a GPU the caller has set up. Callers open the model
/// (`open_source`) before the GPU, so that a mistyped path is said before the GPU starts.
pub fn session_on(
    gpu: Arc<Gpu>,
    source: Box<dyn ByteSource>,
    args: &ModelArgs,
    options: LoadOptions,
) -> Result<Session> {
    let bar = progress_bar("loading");
    let start = std::time::Instant::now();
    let options = LoadOptions {
        n_ctx: args.ctx_size,
        batch: args.batch_size.or(options.batch),
        pooling: args.pooling,
        kv_cache: args.cache_type.map(CacheType::kv).or(options.kv_cache),
        ..options
    };
    let session = Session::load(gpu, source.as_ref(), &options, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .block_on();
    bar.finish_and_clear();
    let mut session = session.with_context(|| format!("cannot load {}", source.describe()))?;
    crate::tuning_file::tune_new_shapes(&mut session.engine)?;
    let s = &session.engine.stats;
    eprintln!(
        "wick: loaded {} in {:.2} s: {} dispatches and {} submit per token, {:.1} MB of weights per token, context {} ({} KV cache)",
        source.describe(),
        start.elapsed().as_secs_f64(),
        s.dispatches_per_token,
        s.submits_per_token,
        s.weight_bytes_per_token as f64 / 1e6,
        session.engine.n_ctx(),
        s.kv_cache.name(),
    );
    Ok(session)
}

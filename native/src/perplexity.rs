//! `wick perplexity`: llama-perplexity's method (wick::perplexity), ending with a line `PPL = <value>`.

use crate::load::{self, ModelArgs};
use anyhow::{Context, Result};
use clap::Args;
use pollster::FutureExt as _;
use std::io::Write;
use wick::gpu::Rounding;

#[derive(Args)]
pub struct PerplexityArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The text file to score
    #[arg(short = 'f', long = "file")]
    file: String,
    /// Chunks to score at most (-1: all)
    #[arg(long = "chunks", default_value_t = -1, allow_hyphen_values = true)]
    chunks: i64,
    /// Let the prompt's products use the GPU's matrix cores, which round their inputs to f16; by
    /// default they stay f32, so that the score measures the model rather than the rounding
    #[arg(long = "matrix-cores")]
    matrix_cores: bool,
}

pub fn main(args: PerplexityArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file))?;
    let scoring = wick::engine::LoadOptions {
        scoring: true,
        // The cache exact too, unless `--cache-type` says otherwise.
        kv_cache: Some(wick::gpu::KvType::F32),
        ..Default::default()
    };
    let source = load::open_source(&args.model.model)?;
    let gpu = load::gpu_with(|gpu| {
        gpu.set_rounds(Rounding::MatrixCores, args.matrix_cores);
        // Nor are the tiles held in f16; a run of a few tokens (a small `-b`, or a chunk's last)
        // keeps its x f32 too.
        gpu.set_rounds(Rounding::F16Tiles, false);
        gpu.set_rounds(Rounding::Int8X, false);
        Ok(())
    })?;

    let mut session = load::session_on(gpu, source, &args.model, scoring)?;
    let max_chunks = usize::try_from(args.chunks).ok();
    eprintln!(
        "wick: chunks of {} tokens, the second half of each scored",
        session.engine.n_ctx()
    );
    let result = wick::perplexity::perplexity(
        &mut session.engine,
        &session.tokenizer,
        &text,
        max_chunks,
        &mut |c, ppl| {
            print!("[{}]{ppl:.4},", c + 1);
            let _ = std::io::stdout().flush();
        },
    )
    .block_on()?;
    session.reset();
    println!();
    eprintln!(
        "wick: {} tokens in the text, {} scored",
        result.text_tokens, result.scored_tokens
    );
    println!("PPL = {:.4}", result.value());
    Ok(())
}

//! `wick perplexity`: llama-perplexity's method. The text is cut into chunks of n_ctx tokens (the first
//! one BOS where the model adds one); each chunk runs from an empty cache and only its second half is
//! scored, so every scored token sees at least n_ctx/2 tokens of context.

use crate::{load, ModelArgs};
use anyhow::{bail, Context, Result};
use clap::Args;

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
}

pub fn main(args: PerplexityArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file))?;
    let mut session = load::session(&args.model)?;
    let n_ctx = session.engine.n_ctx() as usize;
    let add_bos = session.tokenizer.add_bos();
    let mut tokens = Vec::new();
    if add_bos {
        tokens.extend(session.tokenizer.bos());
    }
    tokens.extend(session.tokenizer.encode(&text, false));
    let available = tokens.len() / n_ctx;
    let chunks = if args.chunks < 0 {
        available
    } else {
        available.min(args.chunks as usize)
    };
    if chunks == 0 {
        bail!(
            "{} tokens are fewer than one chunk of {n_ctx} (lower -c)",
            tokens.len()
        );
    }
    eprintln!("wick: {} tokens, {chunks} chunks of {n_ctx}", tokens.len());
    let first = n_ctx / 2;
    let (mut nll, mut count) = (0f64, 0usize);
    for c in 0..chunks {
        let mut chunk = tokens[c * n_ctx..(c + 1) * n_ctx].to_vec();
        if add_bos {
            chunk[0] = session
                .tokenizer
                .bos()
                .expect("add_bos implies a BOS token");
        }
        session.reset();
        let engine = &mut session.engine;
        for (j, &t) in chunk[..n_ctx - 1].iter().enumerate() {
            let logits = engine.step(t, j >= first)?;
            if let Some(logits) = logits {
                nll -= log_softmax_at(&logits, chunk[j + 1] as usize);
                count += 1;
            }
        }
        print!("[{}]{:.4},", c + 1, (nll / count as f64).exp());
        use std::io::Write;
        std::io::stdout().flush()?;
    }
    println!();
    println!("PPL = {:.4}", (nll / count as f64).exp());
    Ok(())
}

/// log softmax(logits)[i], in f64.
fn log_softmax_at(logits: &[f32], i: usize) -> f64 {
    let max = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
    logits[i] as f64 - max - sum.ln()
}

//! `wick bench`: prompt processing and generation speed, like llama-bench, with what a token costs.

use crate::load;
use anyhow::Result;
use clap::{Args, ValueEnum};
use pollster::FutureExt as _;
use std::time::Instant;
use wick::engine::{Engine, LoadOptions};

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Md,
    Json,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Path of a GGUF model [default: models/SmolLM2-135M-Instruct.Q4_1.gguf]
    #[arg(short = 'm', long = "model")]
    model: Option<String>,
    /// Prompt tokens (0: skip the prompt test)
    #[arg(short = 'p', long = "n-prompt", default_value_t = 512)]
    n_prompt: u32,
    /// Generated tokens (0: skip the generation test)
    #[arg(short = 'n', long = "n-gen", default_value_t = 128)]
    n_gen: u32,
    /// Repetitions
    #[arg(short = 'r', long = "repetitions", default_value_t = 5)]
    reps: u32,
    #[arg(short = 'o', long = "output", value_enum, default_value = "md")]
    output: Format,
    /// Also time each kernel on its own and print where a token's time goes
    #[arg(long)]
    profile: bool,
}

struct Row {
    n_prompt: u32,
    n_gen: u32,
    samples: Vec<f64>, // tok/s per repetition
}

pub fn main(args: BenchArgs) -> Result<()> {
    let source = load::open_source(&args.model)?;
    let gpu = load::gpu()?;
    let n_ctx = (args.n_prompt + args.n_gen).max(1);
    let mut engine = Engine::load(
        gpu.clone(),
        source.as_ref(),
        &LoadOptions { n_ctx },
        &mut |_, _| {},
    )
    .block_on()?;
    // Token ids spread over the vocabulary, as llama-bench feeds random tokens.
    let n_vocab = engine.n_vocab();
    let token = |i: u32| (i.wrapping_mul(2_654_435_761) >> 7) % n_vocab;
    let mut rows = Vec::new();
    for (n_prompt, n_gen) in [(args.n_prompt, 0), (0, args.n_gen)] {
        if n_prompt + n_gen == 0 {
            continue;
        }
        let mut samples = Vec::new();
        for rep in 0..=args.reps {
            engine.rewind(0);
            let start = Instant::now();
            if n_prompt > 0 {
                let prompt: Vec<u32> = (0..n_prompt).map(token).collect();
                engine.prefill(&prompt).block_on()?;
            } else {
                let mut t = token(1);
                for _ in 0..n_gen {
                    let logits = engine
                        .step(t, true)
                        .block_on()?
                        .expect("logits were asked for");
                    t = wick::sampler::argmax(&logits);
                }
            }
            // The first run warms up pipelines and caches and is not counted.
            if rep > 0 {
                samples.push((n_prompt + n_gen) as f64 / start.elapsed().as_secs_f64());
            }
        }
        rows.push(Row {
            n_prompt,
            n_gen,
            samples,
        });
    }
    if args.profile {
        print_profile(&mut engine)?;
    }
    let s = &engine.stats;
    let adapter = gpu.info.name.clone();
    let backend = format!("{:?}", gpu.info.backend);
    let model = source.describe();
    match args.output {
        Format::Json => {
            let json: Vec<serde_json::Value> = rows
                .iter()
                .map(|r| {
                    let (avg, sd) = mean_sd(&r.samples);
                    serde_json::json!({
                        "model_filename": model, "n_prompt": r.n_prompt, "n_gen": r.n_gen,
                        "avg_ts": avg, "stddev_ts": sd, "samples_ts": r.samples,
                        "avg_ns": 1e9 * (r.n_prompt + r.n_gen) as f64 / avg,
                        "dispatches_per_token": s.dispatches_per_token, "submits_per_token": s.submits_per_token,
                        "dispatches_per_layer": s.dispatches_per_layer,
                        "weight_bytes_per_token": s.weight_bytes_per_token,
                        "adapter": adapter, "backend": backend,
                    })
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
        Format::Md => {
            let mut per_layer = s.dispatches_per_layer.clone();
            per_layer.dedup();
            let per_layer: Vec<String> = per_layer.iter().map(u32::to_string).collect();
            println!("| model | adapter | backend | test | t/s | dispatches/token | per layer | submits/token | weight MB/token |");
            println!("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
            for r in &rows {
                let (avg, sd) = mean_sd(&r.samples);
                let test = if r.n_prompt > 0 {
                    format!("pp{}", r.n_prompt)
                } else {
                    format!("tg{}", r.n_gen)
                };
                println!(
                    "| {model} | {adapter} | {backend} | {test} | {avg:.2} ± {sd:.2} | {} | {} | {} | {:.1} |",
                    s.dispatches_per_token,
                    per_layer.join(", "),
                    s.submits_per_token,
                    s.weight_bytes_per_token as f64 / 1e6
                );
            }
        }
    }
    Ok(())
}

fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len().max(1) as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// Each pipeline's share of a token, timed dispatch by dispatch (to stderr, beside the table).
fn print_profile(engine: &mut Engine) -> Result<()> {
    let times = engine.profile(5)?;
    let total: f64 = times.iter().map(|(_, t)| t.as_secs_f64()).sum();
    eprintln!(
        "per-token time by kernel, each dispatch alone ({:.2} ms in all):",
        total * 1e3
    );
    for (name, t) in times {
        let ms = t.as_secs_f64() * 1e3;
        eprintln!(
            "  {:<28} {:>9.3} ms {:>5.1}%",
            name,
            ms,
            100.0 * ms / (total * 1e3)
        );
    }
    Ok(())
}

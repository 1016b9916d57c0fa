//! `wick tune`: times all of a model's kernel shapes again on this adapter, every candidate of each
//! (where a first load times each form at one workgroup size first), prints what changed, and keeps
//! the winners in the tuning file (tuning_file.rs), or forgets the adapter's.

use crate::load;
use crate::tuning_file::{
    read_all, report_refused, tune_with_progress, tuning_path, write_all, write_candidate_times,
};
use anyhow::{Context, Result};
use clap::Args;
use pollster::FutureExt as _;
use wick::engine::{Engine, LoadOptions, TuneShapes};

#[derive(Args)]
pub struct TuneArgs {
    /// Path or URL of a GGUF model whose shapes to tune [default: models/SmolLM2-135M-Instruct.Q4_1.gguf]
    #[arg(short = 'm', long = "model")]
    model: Option<String>,
    /// Forget this adapter's tuning instead
    #[arg(long)]
    reset: bool,
}

pub fn main(args: TuneArgs) -> Result<()> {
    let path = tuning_path().context("no tuning file: WICK_TUNING is off, or HOME is not set")?;
    let mut all = read_all(&path);
    let gpu = load::gpu()?;
    if args.reset {
        // Every rounding's winners (`Gpu::tuning_key`).
        let adapter = gpu.adapter_key();
        let rounding = format!("{adapter} | rounding:");
        all.retain(|key, _| *key != adapter && !key.starts_with(&rounding));
        write_all(&path, &all)?;
        eprintln!(
            "wick: forgot the tuning for {adapter} in {}",
            path.display()
        );
        return Ok(());
    }
    let adapter = gpu.tuning_key();
    let source = load::open_source(&args.model)?;
    // A prompt's chunk of the default size, so that its products are tuned too; and a context deep
    // enough for a decode step's split attention, timed where it runs (as far as the model's context
    // goes).
    let options = LoadOptions {
        n_ctx: wick::gpu::SPLIT_TIMED_AT + 1,
        ..Default::default()
    };
    let mut engine = Engine::load(gpu, source.as_ref(), &options, &mut |_, _| {}).block_on()?;
    // Every candidate of every shape: a first load times each form at one workgroup size first.
    let mut tuner = engine.tuner(TuneShapes::All).block_on()?.every_candidate();
    tune_with_progress(&mut engine, &mut tuner)?;
    let (tuning, report) = ((*engine.gpu.tuning()).clone(), tuner.tuned().to_vec());
    println!("| shape | was | µs | now | µs |");
    println!("| --- | --- | ---: | --- | ---: |");
    for t in &report {
        println!(
            "| {} | {} | {:.1} | {} | {:.1} |",
            t.shape.key(),
            t.before.0,
            t.before.1.as_secs_f64() * 1e6,
            t.after.0,
            t.after.1.as_secs_f64() * 1e6
        );
    }
    report_refused(&report);
    write_candidate_times(&adapter, &report)?;
    all.insert(adapter.clone(), tuning);
    write_all(&path, &all)?;
    eprintln!(
        "wick: kept {} shapes for {adapter} in {}",
        report.len(),
        path.display()
    );
    Ok(())
}

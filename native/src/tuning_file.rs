//! Kernel-shape tuning kept in a file. Every command that loads a model times the shapes (matvecs', a
//! prompt's recurrence's and attention's) this adapter has no winners for yet, once
//! (`tune_new_shapes`); `wick tune` (tune.rs) times all of a model's shapes again. Every later
//! command on the same adapter and driver uses the winners (`WICK_TUNING=off` leaves them out and
//! times nothing).

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use pollster::FutureExt as _;
use std::collections::BTreeMap;
use std::path::PathBuf;
use wick::engine::{Engine, TuneShapes, Tuned, Tuner};
use wick::gpu::{Gpu, Tuning};

/// Times the engine's shapes that have no winner on this adapter yet and keeps the winners in
/// the tuning file: what makes tuning happen once per shape. Nothing where tuning is off.
pub fn tune_new_shapes(engine: &mut Engine) -> Result<()> {
    let Some(path) = tuning_path() else {
        return Ok(());
    };
    let new = engine.untuned_shapes().len();
    if new == 0 {
        return Ok(());
    }
    eprintln!(
        "wick: timing {new} new kernel shapes on this adapter (once; WICK_TUNING=off skips this)"
    );
    let start = std::time::Instant::now();
    let mut tuner = engine.tuner(TuneShapes::New).block_on()?;
    tune_with_progress(engine, &mut tuner)?;
    report_refused(tuner.tuned());
    write_candidate_times(&engine.gpu.tuning_key(), tuner.tuned())?;
    let tuning = (*engine.gpu.tuning()).clone();
    let adapter = engine.gpu.tuning_key();
    // Read again: another command may have kept shapes of its own since this one started. Winners
    // timed among an older set of candidates go: the GPU dropped them, and kept they would be dropped
    // (and timed again) at every load.
    let mut all = read_all(&path);
    match all.get_mut(&adapter) {
        Some(kept) if kept.candidates == tuning.candidates => kept.extend(tuning),
        _ => {
            all.insert(adapter, tuning);
        }
    }
    write_all(&path, &all)?;
    eprintln!(
        "wick: tuned in {:.1} s ({}), kept in {}",
        start.elapsed().as_secs_f64(),
        tuner.spent,
        path.display()
    );
    Ok(())
}

/// Runs `tuner` to its end with a progress bar on the terminal: candidates timed of those left
/// (fewer as each shape's second round leaves some out), and shapes done.
pub fn tune_with_progress(engine: &mut Engine, tuner: &mut Tuner) -> Result<()> {
    let bar = ProgressBar::new(tuner.candidates as u64);
    bar.set_style(
        ProgressStyle::with_template("tuning [{bar:30}] {pos}/{len} candidates, {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    while engine.tune_step(tuner).block_on()? {
        bar.set_length(tuner.candidates as u64);
        bar.set_position(tuner.timed as u64);
        bar.set_message(format!(
            "{} of {} shapes",
            tuner.tuned().len(),
            tuner.shapes
        ));
    }
    bar.finish_and_clear();
    Ok(())
}

/// Says which candidate kernels the device would not build (the tuner left them out): a driver
/// that refuses kernels its limits allow is worth knowing of, though tuning went on.
pub fn report_refused(tuned: &[Tuned]) {
    let refused: Vec<_> = (tuned.iter())
        .flat_map(|t| t.refused.iter().map(move |(choice, why)| (t, choice, why)))
        .collect();
    let Some((first, choice, why)) = refused.first() else {
        return;
    };
    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
    eprintln!(
        "wick: this adapter would not build {} candidate kernels, left out of tuning (the first: {choice} for {}: {why})",
        refused.len(),
        first.shape.key()
    );
}

/// Where `WICK_TUNING_TIMES` names a file, appends every timed shape's candidates to it (markdown),
/// fastest alone first, with their times in runs of the plan where the finalists had them: what a
/// kernel's design is judged by on an adapter, beside the winner the tuning file keeps.
pub fn write_candidate_times(adapter: &str, tuned: &[Tuned]) -> Result<()> {
    let Some(path) = std::env::var_os("WICK_TUNING_TIMES") else {
        return Ok(());
    };
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    let mut out = String::new();
    for t in tuned {
        out += &format!("\n{} on {adapter}\n\n", t.shape.key());
        out += "| candidate | µs alone | µs in the plan |\n| --- | ---: | ---: |\n";
        let mut alone = t.alone.clone();
        alone.sort_by_key(|&(_, d)| d);
        for (choice, d) in alone {
            let in_plan = t.in_plan.iter().find(|(c, _)| *c == choice);
            let in_plan = in_plan.map_or(String::new(), |&(_, d)| format!("{:.1}", us(d)));
            out += &format!("| {choice} | {:.1} | {in_plan} |\n", us(d));
        }
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.to_string_lossy()))?;
    std::io::Write::write_all(&mut file, out.as_bytes())
        .with_context(|| format!("writing {}", path.to_string_lossy()))
}

/// Where tuning is kept: $WICK_TUNING (a path, or "off"), else $XDG_CACHE_HOME/wick/tuning.json, else
/// ~/.cache/wick/tuning.json.
pub fn tuning_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WICK_TUNING") {
        return (p != "off").then(|| PathBuf::from(p));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(cache.join("wick").join("tuning.json"))
}

/// Every adapter's tuning in the file, by `Gpu::tuning_key`; nothing where the file is missing or
/// unreadable (tuning is an optimization: a bad file means defaults, not a failure).
pub fn read_all(path: &PathBuf) -> BTreeMap<String, Tuning> {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

pub fn write_all(path: &PathBuf, all: &BTreeMap<String, Tuning>) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(all)?;
    std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))
}

/// Gives the GPU this adapter's kept tuning, if there is one; returns how many shapes it has.
pub fn apply_stored(gpu: &Gpu) -> usize {
    let Some(path) = tuning_path() else { return 0 };
    match read_all(&path).remove(&gpu.tuning_key()) {
        Some(tuning) => {
            gpu.set_tuning(tuning);
            // What the GPU kept: not winners timed among an older set of candidates.
            gpu.tuning().len()
        }
        None => 0,
    }
}

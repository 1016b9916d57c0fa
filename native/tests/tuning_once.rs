//! Tuning happens once per shape: the first command to load a model on an adapter times its new
//! kernel shapes and keeps the winners in the tuning file; the next one starts with them and times
//! nothing; winners timed among an older set of candidates are timed again, once; WICK_TUNING=off
//! times nothing and keeps nothing.

use std::path::Path;
use std::process::Command;

/// Runs `wick run` on the tiny model with WICK_TUNING set; returns its stderr.
fn run_with_tuning(tuning: &str) -> String {
    wick_with_tuning(
        tuning,
        &["run", "-p", "hi", "-n", "2", "--temp", "0", "-c", "64"],
    )
}

/// Runs `wick ARGS -m` the tiny model with WICK_TUNING set; returns its stderr.
fn wick_with_tuning(tuning: &str, args: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = root.join("tests/data/random-llama-chat.gguf");
    let out = Command::new(env!("CARGO_BIN_EXE_wick"))
        .args(args)
        .args(["-m", model.to_str().unwrap()])
        .env("WICK_TUNING", tuning)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "wick {args:?} failed:\n{stderr}");
    stderr
}

/// The adapters' names in a tuning file, and each one's tuned shapes.
fn kept_shapes(file: &Path) -> Vec<(String, usize)> {
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    (kept.as_object().unwrap().iter())
        .map(|(key, tuning)| (key.clone(), tuned_shapes(tuning).len()))
        .collect()
}

/// Winners timed where plans may round (f16 tiles) say nothing of the fastest f32 kernel, and the
/// reverse: a command that may round otherwise than the adapter would unless told (`wick bench
/// --f16-tiles on|off`; `wick perplexity` keeps everything f32) tunes its shapes once, apart, and
/// leaves the others' winners as they were.
#[test]
fn plans_that_round_otherwise_are_tuned_apart() {
    if std::env::var("CI").is_err() && wick_has_no_gpu() {
        eprintln!("skipped: no GPU adapter");
        return;
    }
    let dir = std::env::temp_dir().join(format!("wick-rounding-{}", std::process::id()));
    let file = dir.join("tuning.json");
    let _ = std::fs::remove_dir_all(&dir);
    let tuning = file.to_str().unwrap();
    let bench = |switches: &[&str]| {
        let args = [&["bench", "-p", "16", "-n", "2", "-r", "1"], switches].concat();
        wick_with_tuning(tuning, &args)
    };

    let first = bench(&[]);
    assert!(first.contains("new kernel shapes"), "{first}");
    let default = kept_shapes(&file);
    assert_eq!(default.len(), 1, "{default:?}");
    // One of the two differs from what this adapter does unless told (on for GPUs, off for
    // CPU-backed adapters), and is kept apart; the other is the default, already tuned.
    let on = bench(&["--f16-tiles", "on"]);
    let off = bench(&["--f16-tiles", "off"]);
    assert!(
        on.contains("new kernel shapes") != off.contains("new kernel shapes"),
        "{on}\n{off}"
    );
    let apart = kept_shapes(&file);
    assert_eq!(apart.len(), 2, "{apart:?}");
    assert!(
        apart.contains(&default[0]),
        "the default's winners stand: {apart:?}"
    );
    let (key, shapes) = apart.iter().find(|kept| **kept != default[0]).unwrap();
    assert!(
        *key == format!("{} | rounding: +f16 tiles", default[0].0)
            || *key == format!("{} | rounding: -f16 tiles", default[0].0),
        "{key}"
    );
    assert_eq!(*shapes, default[0].1, "the prompt's shapes too: {apart:?}");
    let unless_told = bench(&[]);
    for again in [
        bench(&["--f16-tiles", "on"]),
        bench(&["--f16-tiles", "off"]),
        unless_told,
    ] {
        assert!(!again.contains("new kernel shapes"), "{again}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn new_shapes_are_tuned_once_and_kept() {
    if std::env::var("CI").is_err() && wick_has_no_gpu() {
        eprintln!("skipped: no GPU adapter");
        return;
    }
    let dir = std::env::temp_dir().join(format!("wick-tuning-{}", std::process::id()));
    let file = dir.join("tuning.json");
    let _ = std::fs::remove_dir_all(&dir);

    let first = run_with_tuning(file.to_str().unwrap());
    assert!(
        first.contains("new kernel shapes on this adapter"),
        "{first}"
    );
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let adapters = kept.as_object().unwrap();
    assert_eq!(adapters.len(), 1, "{kept}");
    let shapes = tuned_shapes(adapters.values().next().unwrap()).len();
    assert!(shapes >= 4, "{kept}");

    let second = run_with_tuning(file.to_str().unwrap());
    assert!(!second.contains("new kernel shapes"), "{second}");
    assert!(
        second.contains(&format!("({shapes} kernel shapes tuned)")),
        "{second}"
    );

    // Winners timed among an older set of candidates (a file from before the set grew) are timed
    // again, once: the file then names the current set, and the next command times nothing.
    let mut older = kept.clone();
    for tuning in older.as_object_mut().unwrap().values_mut() {
        tuning["candidates"] = serde_json::json!(0);
    }
    std::fs::write(&file, serde_json::to_vec(&older).unwrap()).unwrap();
    let again = run_with_tuning(file.to_str().unwrap());
    assert!(
        again.contains(&format!("timing {shapes} new kernel shapes")),
        "{again}"
    );
    let renewed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    // The same adapter, set and shapes (the winners may differ: timings are noisy).
    let shape_names = |v: &serde_json::Value| {
        let tuning = v.as_object().unwrap().values().next().unwrap().clone();
        (
            v.as_object().unwrap().keys().cloned().collect::<Vec<_>>(),
            tuning["candidates"].clone(),
            tuned_shapes(&tuning),
        )
    };
    assert_eq!(shape_names(&renewed), shape_names(&kept), "{renewed}");
    let after = run_with_tuning(file.to_str().unwrap());
    assert!(!after.contains("new kernel shapes"), "{after}");

    let off = run_with_tuning("off");
    assert!(!off.contains("kernel shapes"), "{off}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// WICK_TUNING_TIMES gets every tuned shape's candidates: a table a shape the tuning file keeps,
/// each candidate's time alone, and the finalists' in the plan where the adapter times them there.
#[test]
fn candidate_times_are_written_where_asked() {
    if std::env::var("CI").is_err() && wick_has_no_gpu() {
        eprintln!("skipped: no GPU adapter");
        return;
    }
    let dir = std::env::temp_dir().join(format!("wick-tuning-times-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (file, times) = (dir.join("tuning.json"), dir.join("times.md"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO_BIN_EXE_wick"))
        .args([
            "run", "-p", "hi", "-n", "2", "--temp", "0", "-c", "64", "-m",
        ])
        .arg(root.join("tests/data/random-llama-chat.gguf"))
        .env("WICK_TUNING", &file)
        .env("WICK_TUNING_TIMES", &times)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let (adapter, tuning) = kept.as_object().unwrap().iter().next().unwrap();
    let text = std::fs::read_to_string(&times).unwrap();
    let tables: Vec<&str> = text.split("\n\n").collect();
    let shapes = tuned_shapes(tuning);
    assert!(shapes.len() >= 4, "{kept}");
    for shape in &shapes {
        let at = (tables.iter())
            .position(|t| t.trim() == format!("{shape} on {adapter}"))
            .unwrap_or_else(|| panic!("no table for {shape} in\n{text}"));
        let rows: Vec<Vec<&str>> = (tables[at + 1].lines().skip(2))
            .map(|row| row.split(" | ").collect())
            .collect();
        assert!(!rows.is_empty(), "{shape}: {}", tables[at + 1]);
        let alone: Vec<f64> = rows.iter().map(|r| r[1].parse().unwrap()).collect();
        assert!(alone.iter().all(|&us| us > 0.0), "{shape}: {alone:?}");
        assert!(
            alone.windows(2).all(|w| w[0] <= w[1]),
            "fastest first: {alone:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shapes an adapter's kept tuning names: its matvecs', prompt recurrences' and attentions'.
fn tuned_shapes(tuning: &serde_json::Value) -> Vec<String> {
    (["matvec", "recurrence", "attention"].iter())
        .filter_map(|kind| tuning[kind].as_object())
        .flat_map(|shapes| shapes.keys().cloned())
        .collect()
}

/// Whether this machine has no adapter at all (outside CI such a test skips).
fn wick_has_no_gpu() -> bool {
    pollster::block_on(wick::gpu::Gpu::new()).is_err()
}

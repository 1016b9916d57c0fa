//! Tuning happens once per shape: the first command to load a model on an adapter times its new
//! kernel shapes and keeps the winners in the tuning file; the next one starts with them and times
//! nothing; WICK_TUNING=off times nothing and keeps nothing.

use std::path::Path;
use std::process::Command;

/// Runs `wick run` on the tiny model with WICK_TUNING set; returns its stderr.
fn run_with_tuning(tuning: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = root.join("tests/data/random-llama-chat.gguf");
    let out = Command::new(env!("CARGO_BIN_EXE_wick"))
        .args(["run", "-m", model.to_str().unwrap(), "-p", "hi", "-n", "2"])
        .args(["--temp", "0", "-c", "64"])
        .env("WICK_TUNING", tuning)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "wick run failed:\n{stderr}");
    stderr
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
    let shapes = adapters.values().next().unwrap()["matvec"]
        .as_object()
        .unwrap()
        .len();
    assert!(shapes >= 4, "{kept}");

    let second = run_with_tuning(file.to_str().unwrap());
    assert!(!second.contains("new kernel shapes"), "{second}");
    assert!(
        second.contains(&format!("({shapes} kernel shapes tuned)")),
        "{second}"
    );

    let off = run_with_tuning("off");
    assert!(!off.contains("kernel shapes"), "{off}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether this machine has no adapter at all (outside CI such a test skips).
fn wick_has_no_gpu() -> bool {
    pollster::block_on(wick::gpu::Gpu::new()).is_err()
}

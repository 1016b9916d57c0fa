//! What a command prints. On a headless machine, nothing that reads as an error when nothing is wrong:
//! without XDG_RUNTIME_DIR the Vulkan stack's display clients complain unless Wick gives them a folder.
//! Where something is wrong, the error says it once.

use std::path::Path;
use std::process::Command;

#[test]
fn no_false_errors_without_a_runtime_dir() {
    if std::env::var("CI").is_err() && pollster::block_on(wick::gpu::Gpu::new()).is_err() {
        eprintln!("skipped: no GPU adapter");
        return;
    }
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/random-llama-chat.gguf");
    let out = Command::new(env!("CARGO_BIN_EXE_wick"))
        .args(["run", "-m", model.to_str().unwrap(), "-p", "hi", "-n", "2"])
        .args(["--temp", "0", "-c", "64"])
        .env_remove("XDG_RUNTIME_DIR")
        .env("WICK_TUNING", "off")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "wick run failed:\n{stderr}");
    assert!(!stderr.to_lowercase().contains("error"), "{stderr}");
}

#[test]
fn a_missing_model_is_named_once_with_the_reason() {
    let missing = std::env::temp_dir().join("wick-no-such-model.gguf");
    let out = Command::new(env!("CARGO_BIN_EXE_wick"))
        .args(["info", "-m", missing.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let reason = std::fs::File::open(&missing).unwrap_err().to_string();
    assert!(stderr.starts_with("error: cannot open "), "{stderr}");
    assert_eq!(
        stderr.matches("wick-no-such-model.gguf").count(),
        1,
        "{stderr}"
    );
    assert_eq!(stderr.matches(&reason).count(), 1, "{stderr}");
}

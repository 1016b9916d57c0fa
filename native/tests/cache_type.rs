//! How the KV cache holds keys and values unless told follows the adapter (f16 on GPUs, as
//! llama.cpp keeps it; f32 where the adapter runs on the CPU), `--cache-type` overrides it, and the
//! commands say which they ran.

use std::path::Path;
use std::process::Command;

/// Runs `wick ARGS -m` the tiny model, untuned; returns its stdout and stderr.
fn wick(args: &[&str]) -> (String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = root.join("tests/data/random-llama-chat.gguf");
    let out = Command::new(env!("CARGO_BIN_EXE_wick"))
        .args(args)
        .args(["-m", model.to_str().unwrap()])
        .env("WICK_TUNING", "off")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "wick {args:?} failed:\n{stderr}");
    (stdout, stderr)
}

#[test]
fn the_kv_cache_follows_the_adapter_unless_told() {
    let Ok(gpu) = pollster::block_on(wick::gpu::Gpu::new()) else {
        assert!(std::env::var("CI").is_err(), "no GPU adapter in CI");
        eprintln!("skipped: no GPU adapter");
        return;
    };
    let unless_told = match gpu.runs_on_cpu() {
        true => "f32",
        false => "f16",
    };
    assert_eq!(wick::engine::default_kv_cache(&gpu).name(), unless_told);
    drop(gpu);

    let bench = ["bench", "-p", "8", "-n", "2", "-r", "1"];
    let (header, _) = wick(&bench);
    assert!(
        header.contains(&format!("; KV cache {unless_told}\n")),
        "{header}"
    );
    for told in ["f16", "f32"] {
        let (header, _) = wick(&[&bench[..], &["--cache-type", told]].concat());
        assert!(header.contains(&format!("; KV cache {told}\n")), "{header}");
    }
    let run = ["run", "-p", "hi", "-n", "2", "--temp", "0", "-c", "64"];
    let (_, loaded) = wick(&run);
    assert!(
        loaded.contains(&format!("({unless_told} KV cache)")),
        "{loaded}"
    );
    let (_, loaded) = wick(&[&run[..], &["--cache-type", "f16"]].concat());
    assert!(loaded.contains("(f16 KV cache)"), "{loaded}");
}

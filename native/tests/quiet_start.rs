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

/// Each command that loads a model says a path it cannot open first, naming it once with the OS's
/// reason once, before it starts the GPU (whose start on a large card takes a while, and whose line
/// would come before the error); a draft model's too, before the model loads.
#[test]
fn a_missing_model_is_named_once_with_the_reason() {
    let missing = std::env::temp_dir().join("wick-no-such-model.gguf");
    let missing = missing.to_str().unwrap();
    let text = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let commands: [&[&str]; 5] = [
        &["info"],
        &["run", "-p", "hi"],
        &["chat"],
        &["serve"],
        &["perplexity", "-f", text],
    ];
    for command in commands {
        says_once_it_cannot_open(&[command, &["-m", missing]].concat(), missing);
    }
    // A folder in place of a file, once with what it is.
    let folder = std::env::temp_dir();
    let out = Command::new(env!("CARGO_BIN_EXE_wick"))
        .args(["info", "-m", folder.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.starts_with("error: cannot open "), "{stderr}");
    assert_eq!(stderr.matches("directory").count(), 1, "{stderr}");
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/random-llama-chat.gguf");
    let model = model.to_str().unwrap();
    for command in &commands[1..4] {
        let args = [command, &["-m", model, "--draft", missing][..]].concat();
        says_once_it_cannot_open(&args, missing);
    }
}

/// `wick args` fails first thing, saying it cannot open `path`, with the OS's reason, each once.
fn says_once_it_cannot_open(args: &[&str], path: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_wick"))
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?}: {stderr}");
    assert!(
        stderr.starts_with("error: cannot open "),
        "{args:?}: {stderr}"
    );
    assert_eq!(stderr.matches(path).count(), 1, "{args:?}: {stderr}");
    let reason = std::fs::File::open(path).unwrap_err().to_string();
    assert_eq!(stderr.matches(&reason).count(), 1, "{args:?}: {stderr}");
}

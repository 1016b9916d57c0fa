//! Ctrl-C in `wick chat` stops the reply, not the program: the next message gets an answer.

#![cfg(unix)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Collects what a pipe says, on its own thread.
fn collect(mut pipe: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = text.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    text
}

fn wait_for(what: &str, text: &Arc<Mutex<String>>, pattern: &str, after: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let seen = text.lock().unwrap().clone();
        if let Some(at) = seen.get(after..).and_then(|rest| rest.find(pattern)) {
            return after + at + pattern.len();
        }
        assert!(
            Instant::now() < deadline,
            "no {what} ({pattern:?}) in:\n{seen}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn ctrl_c_stops_the_reply_and_the_chat_goes_on() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = root.join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(model.exists(), "run scripts/fetch-model.sh");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wick"))
        .args([
            "chat",
            "-m",
            model.to_str().unwrap(),
            "-n",
            "400",
            "--temp",
            "0",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = collect(child.stdout.take().unwrap());
    let err = collect(child.stderr.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let interrupt = |pid: u32| {
        let sent = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    };

    wait_for("ready line", &err, "chat ready", 0);
    stdin
        .write_all(b"Write a very long story about a dragon.\n")
        .unwrap();
    // A few words of the reply, then Ctrl-C.
    let deadline = Instant::now() + Duration::from_secs(300);
    while out.lock().unwrap().split_whitespace().count() < 4 {
        assert!(
            Instant::now() < deadline,
            "no reply: {}",
            err.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    interrupt(child.id());
    let at = wait_for("stop notice", &err, "wick: stopped", 0);
    let at = wait_for("stopped reply's figures", &err, "generated at", at);
    assert!(child.try_wait().unwrap().is_none(), "the program ended");

    stdin.write_all(b"What is 2+2?\n").unwrap();
    wait_for("second reply's figures", &err, "generated at", at);
    stdin.write_all(b"\n").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}: {}", err.lock().unwrap());
}

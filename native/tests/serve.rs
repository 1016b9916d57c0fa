//! `wick serve` against the official `openai` Python client: starts the server on a free loopback port
//! and runs native/tests/serve_client.py, which checks answers, errors, keys, CORS, queueing and
//! disconnects. The client's Python comes from WICK_TEST_PYTHON or target/test-venv (scripts/test.sh
//! installs it); CI=true makes a missing one, or a missing GPU, a failure instead of a skip.

#[path = "../../tests/common/edit_gguf.rs"]
mod edit_gguf;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn skip_or_fail(why: &str) {
    if std::env::var("CI").is_ok() {
        panic!("{why}");
    }
    eprintln!("skipped: {why}");
}

fn python() -> Option<PathBuf> {
    let python = std::env::var_os("WICK_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/test-venv/bin/python"));
    let has_openai = Command::new(&python)
        .args(["-c", "import openai, jsonschema"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_openai {
        skip_or_fail(&format!(
            "{} with the openai and jsonschema packages is missing (scripts/test.sh installs them)",
            python.display()
        ));
        return None;
    }
    Some(python)
}

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the server on port 0 with a context of `n_ctx` tokens (and `more` arguments) and returns it
/// with the base URL it printed. Untuned: tuning is tests/tuning_once.rs's to check, and on lavapipe it
/// would cost this file minutes (about 2 for Qwen2.5 0.5B's shapes) to pick about the CPU defaults.
fn start(model: &Path, key: &str, n_ctx: u32, more: &[&str]) -> Option<(Server, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wick"))
        .args(["serve", "--port", "0", "-c", &n_ctx.to_string()])
        .args(more)
        .args(["--cors", "--max-body", "65536"])
        .env("WICK_TUNING", "off")
        .arg("--api-key")
        .arg(key)
        .arg("-m")
        .arg(model)
        .stderr(Stdio::piped())
        .spawn()
        .expect("wick starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let server = Server(child);
    let mut log = String::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("server output");
        eprintln!("{line}");
        log += &line;
        if let Some(url) = line
            .split(" at ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
        {
            if url.starts_with("http://") {
                return Some((server, url.to_string()));
            }
        }
    }
    if log.contains("no GPU adapter") {
        skip_or_fail(&log);
        return None;
    }
    panic!("the server stopped before serving: {log}");
}

/// Runs a client script (`native/tests/SCRIPT BASE_URL KEY ARGS...`) against a server on `model`
/// (under the repository) with a context of `n_ctx` tokens.
fn client_against(model: &str, n_ctx: u32, script: &str, args: &[std::ffi::OsString]) {
    client_against_file(&root().join(model), n_ctx, script, args)
}

fn client_against_file(model: &Path, n_ctx: u32, script: &str, args: &[std::ffi::OsString]) {
    client_of_server(model, (n_ctx, &[]), script, args)
}

/// Runs a client script (`native/tests/SCRIPT BASE_URL KEY ARGS...`, the server's process id in
/// WICK_SERVER_PID) against a server on `model` started with a context of `n_ctx` tokens and `more`
/// arguments.
fn client_of_server(
    model: &Path,
    (n_ctx, more): (u32, &[&str]),
    script: &str,
    args: &[std::ffi::OsString],
) {
    let Some(python) = python() else { return };
    assert!(
        model.exists(),
        "{} is missing: run scripts/fetch-model.sh all",
        model.display()
    );
    let key = "test-key-7f3a";
    let Some((server, url)) = start(model, key, n_ctx, more) else {
        return;
    };
    let status = Command::new(python)
        .arg(root().join("native/tests").join(script))
        .arg(&url)
        .arg(key)
        .args(args)
        .env("WICK_SERVER_PID", server.0.id().to_string())
        .status()
        .expect("python runs");
    assert!(status.success(), "{script} failed");
}

const SMOLLM2: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

#[test]
fn openai_client_against_wick_serve() {
    let args = [
        env!("CARGO_BIN_EXE_wick").into(),
        root().join(SMOLLM2).into(),
        root()
            .join("tests/goldens/llama.cpp/smollm2-q4_1-greedy.json")
            .into(),
    ];
    client_against(SMOLLM2, 256, "serve_client.py", &args);
}

/// Every fourth schema once (`WICK_FULL_REPLIES=1`: every schema at both temperatures, about 25
/// minutes on lavapipe, one at a time).
#[test]
fn structured_outputs_through_the_openai_client() {
    let quick: &[std::ffi::OsString] = match std::env::var_os("WICK_FULL_REPLIES") {
        Some(_) => &[],
        None => &["quick".into()],
    };
    // Four slots, each with room for a prompt and a reply of max_tokens 256: the replies come four
    // at a time, each under its own grammar.
    let model = root().join(SMOLLM2);
    client_of_server(&model, (4096, &["-np", "4"]), "structured_client.py", quick);
}

/// SmolLM2's template knows no tools: they go in a system message, the reply in a JSON envelope.
#[test]
fn tool_calls_through_the_openai_client() {
    client_against(SMOLLM2, 1024, "tools_client.py", &[]);
}

/// Qwen2.5's template lays out tools and its model writes `<tool_call>` blocks.
#[test]
fn tool_calls_in_qwen25s_own_format() {
    client_against(
        "models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        1024,
        "tools_client.py",
        &["quick".into()],
    );
}

/// An embedding model: the random llama3 file with mean pooling in its metadata, against llama.cpp's
/// vectors for it (tests/goldens/embeddings.json).
#[test]
fn embeddings_through_the_openai_client() {
    use wick::gguf::Value;
    let file = "tests/data/random-llama3.gguf";
    let source = edit_gguf::variant(&root().join(file), |metadata, _| {
        edit_gguf::set(metadata, "llama.pooling_type", Value::U32(1));
    });
    let path = std::env::temp_dir().join(format!("wick-embedding-{}.gguf", std::process::id()));
    std::fs::write(&path, &source.bytes).unwrap();
    let golden = root().join("tests/goldens/embeddings.json");
    client_against_file(
        &path,
        64,
        "embeddings_client.py",
        &[golden.into(), file.into()],
    );
    let _ = std::fs::remove_file(&path);
}

/// A model whose template marks reasoning: `reasoning_content` beside `content`, whole and streamed
/// (reasoning_client.py, on the random Qwen3.5 file).
#[test]
fn reasoning_through_the_openai_client() {
    client_against(
        "tests/data/random-qwen35-q8_0.gguf",
        256,
        "reasoning_client.py",
        &[],
    );
}

/// Four slots (`-np 4`): requests answered together as alone, one joining mid-generation, a slot's
/// conversation reused, a slot's share of the context, and mixed requests with disconnects
/// (parallel_client.py).
#[test]
fn parallel_slots_through_the_openai_client() {
    let model = root().join(SMOLLM2);
    client_of_server(&model, (1024, &["-np", "4"]), "parallel_client.py", &[]);
}

/// The same four slots sharing a draft model (`-np 4 --draft`, the model drafting for itself): each
/// slot's drafts decoded by the draft's own sequence for it, beside the others', and every reply
/// what it is alone, through joins, disconnects and mixed requests.
#[test]
fn parallel_slots_sharing_a_draft_model() {
    let model = root().join(SMOLLM2);
    let more = ["-np", "4", "--draft", model.to_str().unwrap()];
    let speculating = ["speculating".into()];
    client_of_server(&model, (1024, &more), "parallel_client.py", &speculating);
}

/// Predicted outputs on a server that drafts by lookup: the reply is the model's, the prediction's
/// tokens counted (prediction_client.py).
#[test]
fn predicted_outputs_through_the_openai_client() {
    let model = root().join(SMOLLM2);
    client_of_server(&model, (512, &["--lookup"]), "prediction_client.py", &[]);
}

/// The same on a server whose parallel slots draft by lookup (`-np 2 --lookup`): each slot drafts
/// from its request's prediction first.
#[test]
fn predicted_outputs_through_parallel_slots() {
    let model = root().join(SMOLLM2);
    let server = (512, &["--lookup", "-np", "2"][..]);
    client_of_server(&model, server, "prediction_client.py", &[]);
}

/// The random Gemma 3 model, its projector, the image, and the greedy reply to the image prompt
/// (tests/goldens/random-gemma3-vision.json, llama.cpp's).
fn image_golden() -> (PathBuf, PathBuf, PathBuf, String) {
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/goldens/random-gemma3-vision.json")).unwrap(),
    )
    .unwrap();
    let model = root().join(golden["text_model"].as_str().unwrap());
    let mmproj = root().join(golden["mmproj"].as_str().unwrap());
    let header = pollster::block_on(wick::gguf::read_header(
        &wick::gguf::FileSource::open(&model).unwrap(),
    ))
    .unwrap();
    let tokenizer = wick::tokenizer::Tokenizer::from_gguf(&header).unwrap();
    let greedy: Vec<u32> = (golden["greedy"].as_array().unwrap().iter())
        .map(|s| s["id"].as_u64().unwrap() as u32)
        .collect();
    let expected = tokenizer.decode(&greedy, false);
    let image = root().join(golden["image"].as_str().unwrap());
    (model, mmproj, image, expected)
}

/// Images in chat requests (image_client.py): the random Gemma 3 model with its projector, whose
/// greedy reply to the image prompt is llama.cpp's (tests/goldens/random-gemma3-vision.json), with
/// the model drafting for itself (speculative decoding beside images: the draft reads the text).
#[test]
fn images_through_the_openai_client() {
    let (model, mmproj, image, expected) = image_golden();
    let more = [
        "--mmproj",
        mmproj.to_str().unwrap(),
        "--draft",
        model.to_str().unwrap(),
    ];
    let args = [image.into(), expected.into()];
    client_of_server(&model, (64, &more), "image_client.py", &args);
}

/// Images in requests to a server with parallel slots: image_client.py's checks, then requests with
/// images at once, whose prompts are read together in runs that take each image whole.
#[test]
fn images_through_parallel_slots() {
    let (model, mmproj, image, expected) = image_golden();
    let more = ["--mmproj", mmproj.to_str().unwrap(), "-np", "2"];
    let args = [image.into(), expected.into(), "together".into()];
    client_of_server(&model, (128, &more), "image_client.py", &args);
}

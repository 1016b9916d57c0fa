//! `wick run --mmproj --image`: the random Gemma 3 model and projector of tests/vision.rs, the PNG read
//! from its file; the reply is llama.cpp's greedy reply to the same prompt
//! (tests/goldens/random-gemma3-vision.json), decoded to text by the same tokenizer. Then the mistakes
//! a user makes on the command line, each refused with a message that says what to do.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn wick(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wick"))
        .args(args)
        .env("WICK_TUNING", "off")
        .output()
        .unwrap()
}

fn no_gpu() -> bool {
    let none = std::env::var("CI").is_err() && pollster::block_on(wick::gpu::Gpu::new()).is_err();
    if none {
        eprintln!("skipped: no GPU adapter");
    }
    none
}

#[test]
fn run_reads_an_image_and_replies_as_llama_cpp() {
    if no_gpu() {
        return;
    }
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(data("tests/goldens/random-gemma3-vision.json")).unwrap(),
    )
    .unwrap();
    let (model, mmproj, image) = (
        data(golden["text_model"].as_str().unwrap()),
        data(golden["mmproj"].as_str().unwrap()),
        data(golden["image"].as_str().unwrap()),
    );
    let header = pollster::block_on(wick::gguf::read_header(
        &wick::gguf::FileSource::open(&model).unwrap(),
    ))
    .unwrap();
    let tokenizer = wick::tokenizer::Tokenizer::from_gguf(&header).unwrap();
    let greedy: Vec<u32> = (golden["greedy"].as_array().unwrap().iter())
        .map(|s| s["id"].as_u64().unwrap() as u32)
        .collect();
    let want = tokenizer.decode(&greedy, false);
    let n = greedy.len().to_string();
    let out = wick(&[
        "run",
        "-m",
        model.to_str().unwrap(),
        "--mmproj",
        mmproj.to_str().unwrap(),
        "--image",
        image.to_str().unwrap(),
        "-p",
        golden["prompt_text"].as_str().unwrap(),
        "-n",
        &n,
        "--temp",
        "0",
        "-c",
        "64",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "wick run failed:\n{stderr}");
    assert!(stderr.contains("16 tokens an image"), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        want.trim_end()
    );
}

#[test]
fn image_mistakes_are_refused_with_what_to_do() {
    if no_gpu() {
        return;
    }
    let model = data("tests/data/random-gemma3.gguf");
    let (model, mmproj) = (
        model.to_str().unwrap(),
        data("tests/data/random-gemma3-mmproj.gguf"),
    );
    let mmproj = mmproj.to_str().unwrap();
    let png = data("tests/data/vision-test.png");
    let png = png.to_str().unwrap();
    let not_an_image = data("tests/data/perplexity.txt");
    let cases: [(&[&str], &str); 4] = [
        (&["--image", png], "--mmproj"),
        (
            &[
                "--mmproj",
                mmproj,
                "--image",
                not_an_image.to_str().unwrap(),
            ],
            "cannot decode the image",
        ),
        (
            &["--mmproj", mmproj, "--image", "missing.png"],
            "cannot read missing.png",
        ),
        (
            &["--mmproj", mmproj, "--image", png, "-b", "8"],
            "16 tokens, more than prompt runs of 8",
        ),
    ];
    for (extra, says) in cases {
        let mut args = vec!["run", "-m", model, "-p", "hi", "-n", "1", "-c", "64"];
        args.extend_from_slice(extra);
        let out = wick(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra:?} was taken");
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
    }
}

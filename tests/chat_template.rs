//! Chat templates rendered with minijinja against Python jinja2's output (goldens made by
//! tests/goldens/chat_template/make_goldens.py), and hostile templates.

use pollster::FutureExt as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value as Json;
use wick::chat_template::{render, render_with, ChatMessage, Extras, Limits, TemplateError};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/goldens/chat_template")
}

fn messages(v: &Json) -> Vec<ChatMessage> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|m| ChatMessage::new(m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect()
}

/// The formats given to files without a template render as llama.cpp's built-in ones do (goldens by
/// llama_chat_apply_template, in builtins.json).
#[test]
fn family_formats_render_as_llama_cpp_builds_them_in() {
    let goldens: Json =
        serde_json::from_str(&std::fs::read_to_string(dir().join("builtins.json")).unwrap())
            .unwrap();
    for t in goldens.as_array().unwrap() {
        let name = t["builtin"].as_str().unwrap();
        let source = wick::chat_template::family_template(name).unwrap();
        for (i, case) in t["cases"].as_array().unwrap().iter().enumerate() {
            let gen = case["add_generation_prompt"].as_bool().unwrap();
            let got = render(source, &messages(&case["messages"]), gen, "<bos>", "<eos>");
            assert_eq!(
                got.unwrap(),
                case["output"].as_str().unwrap(),
                "{name} case {i}"
            );
        }
    }
}

#[test]
fn templates_render_as_jinja2_does() {
    // strftime_now's "now" as the goldens were rendered with it (make_goldens.py NOW): every test in
    // this file that renders a date wants that one.
    std::env::set_var("SOURCE_DATE_EPOCH", "1767323045");
    let goldens: Json =
        serde_json::from_str(&std::fs::read_to_string(dir().join("goldens.json")).unwrap())
            .unwrap();
    let mut checked = 0;
    for t in goldens.as_array().unwrap() {
        let name = t["template"].as_str().unwrap();
        let source = std::fs::read_to_string(dir().join(format!("{name}.jinja"))).unwrap();
        for (i, case) in t["cases"].as_array().unwrap().iter().enumerate() {
            let extras = Extras {
                tools: case["tools"].as_array().cloned().unwrap_or_default(),
                variables: case["variables"].as_object().cloned().unwrap_or_default(),
            };
            let got = render_with(
                &source,
                &messages(&case["messages"]),
                &extras,
                case["add_generation_prompt"].as_bool().unwrap(),
                case["bos_token"].as_str().unwrap(),
                case["eos_token"].as_str().unwrap(),
                Limits::default(),
            );
            let label = format!("{name} case {i}");
            if let Some(want) = case["output"].as_str() {
                assert_eq!(
                    got.unwrap_or_else(|e| panic!("{label}: {e}")),
                    want,
                    "{label}"
                );
            } else if let Some(want) = case["raised"].as_str() {
                match got {
                    Err(TemplateError::Raised(msg)) => assert_eq!(msg, want, "{label}"),
                    other => {
                        panic!("{label}: expected the template to raise {want:?}, got {other:?}")
                    }
                }
            } else {
                assert!(
                    got.is_err(),
                    "{label}: jinja2 failed ({}) but minijinja rendered",
                    case["error"]
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} cases");
}

#[test]
fn smollm2_template_is_the_one_in_the_model() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        path.exists(),
        "{} is missing: run scripts/fetch-model.sh to fetch the model",
        path.display()
    );
    let h = wick::gguf::read_header(&wick::gguf::FileSource::open(&path).unwrap())
        .block_on()
        .unwrap();
    let in_model = h.get_str("tokenizer.chat_template").unwrap();
    assert_eq!(
        in_model,
        std::fs::read_to_string(dir().join("smollm2.jinja")).unwrap()
    );
    let out = render(
        in_model,
        &[ChatMessage::new("user", "What is 2+2?")],
        true,
        "",
        "",
    )
    .unwrap();
    assert!(
        out.ends_with("<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"),
        "{out:?}"
    );
}

/// Renders a template with no messages under the default limits, and reports how long it took.
fn hostile(template: &str) -> (Result<String, TemplateError>, Duration) {
    let t = Instant::now();
    let r = render(
        template,
        &[ChatMessage::new("user", "hi")],
        true,
        "<s>",
        "</s>",
    );
    (r, t.elapsed())
}

#[test]
fn hostile_templates_are_stopped() {
    let (r, took) =
        hostile("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
    assert!(matches!(r, Err(TemplateError::OutOfFuel(_))), "{r:?}");
    assert!(took < Duration::from_secs(30), "{took:?}");

    let (r, _) = hostile("{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}");
    assert!(matches!(r, Err(TemplateError::OutputTooLarge(_))), "{r:?}");

    let (r, _) = hostile("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}");
    assert!(matches!(r, Err(TemplateError::Render(_))), "{r:?}");

    let (r, _) = hostile("{% for message in messages %}{{ message.content }");
    match r {
        Err(TemplateError::Syntax(msg)) => assert!(msg.contains("chat template:1"), "{msg}"),
        other => panic!("{other:?}"),
    }

    let (r, _) = hostile("{{ raise_exception('no system messages, please') }}");
    assert!(
        matches!(&r, Err(TemplateError::Raised(m)) if m == "no system messages, please"),
        "{r:?}"
    );

    let limits = Limits {
        max_template_bytes: 100,
        ..Limits::default()
    };
    let r = render_with(
        &"x".repeat(101),
        &[],
        &Extras::default(),
        false,
        "",
        "",
        limits,
    );
    assert!(
        matches!(r, Err(TemplateError::TemplateTooLarge { .. })),
        "{r:?}"
    );
}

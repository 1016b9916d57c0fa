//! A reply's reasoning read apart from its answer where harmony's markers are control tokens, as in
//! gpt-oss's vocabulary: the random gpt-oss file with seven of its tokens renamed to the markers and
//! made control tokens. The decoder hides control tokens from text but must show these to the reply's
//! splitter; `<|return|>` still ends the reply.

use crate::common;

use common::edit_gguf;
use pollster::FutureExt as _;
use std::path::Path;
use wick::gguf::{read_header, Value};
use wick::reasoning::{Channels, Format};
use wick::reply::FinishReason;
use wick::reply::Reply;
use wick::sampler::{Sampler, SamplerConfig};
use wick::tokenizer::Tokenizer;

const MARKERS: [&str; 7] = [
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|constrain|>",
];
const CONTROL: i32 = 3;

/// The random gpt-oss file's tokenizer, the markers in place of the tokens before its last (BOS/EOS).
fn harmony_tokenizer() -> Tokenizer {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/random-gpt-oss-q8_0.gguf");
    let source = edit_gguf::variant(&file, |metadata, _| {
        for (key, value) in metadata.iter_mut() {
            let Value::Array(items) = value else { continue };
            let first = items.len() - 1 - MARKERS.len();
            match key.as_str() {
                "tokenizer.ggml.tokens" => {
                    for (i, m) in MARKERS.iter().enumerate() {
                        items[first + i] = Value::String(m.to_string());
                    }
                }
                "tokenizer.ggml.token_type" => {
                    for item in &mut items[first..first + MARKERS.len()] {
                        *item = Value::I32(CONTROL);
                    }
                }
                _ => {}
            }
        }
    });
    let header = read_header(&source).block_on().unwrap();
    Tokenizer::from_gguf(&header).unwrap()
}

/// What a reply said: its reasoning and answer, and the same of its pieces joined.
struct Said {
    reasoning: String,
    answer: String,
    streamed: (String, String),
    finish: FinishReason,
}

/// Runs `ids` through a reply (split by harmony after `prompt` where `split`).
fn reply(tokenizer: &Tokenizer, ids: &[u32], split: Option<&str>) -> Said {
    let mut reply = Reply::new(100, &[]);
    if let Some(prompt) = split {
        reply = reply.with_reasoning(Channels::after(Format::Harmony, prompt), tokenizer);
    }
    let sampler = Sampler::new(SamplerConfig::greedy());
    let mut streamed = (String::new(), String::new());
    let mut on_text = |piece: wick::reply::Piece| {
        streamed.0 += piece.reasoning;
        streamed.1 += piece.text;
        true
    };
    let finish = ids
        .iter()
        .find_map(|&id| reply.push(tokenizer, (id, None), &sampler, true, &mut on_text))
        .unwrap_or(FinishReason::Length);
    let c = reply.finish(finish, tokenizer, &mut on_text);
    Said {
        reasoning: c.reasoning,
        answer: c.text,
        streamed,
        finish,
    }
}

#[test]
fn harmony_markers_that_are_control_tokens_split_the_reply() {
    let tokenizer = harmony_tokenizer();
    let marker = |m: &str| tokenizer.token_id(m).expect("a marker token");
    let text = |t: &str| tokenizer.encode(t, false);
    let ids: Vec<u32> = [
        vec![marker("<|channel|>")],
        text("analysis"),
        vec![marker("<|message|>")],
        text("Adding two and two."),
        vec![marker("<|end|>"), marker("<|start|>")],
        text("assistant"),
        vec![marker("<|channel|>")],
        text("final"),
        vec![marker("<|message|>")],
        text("Four."),
        vec![marker("<|return|>")],
        text("never read"),
    ]
    .concat();
    let prompt = "<|start|>user<|message|>2+2?<|end|><|start|>assistant";
    let said = reply(&tokenizer, &ids, Some(prompt));
    let split = (said.reasoning.as_str(), said.answer.as_str());
    assert_eq!(split, ("Adding two and two.", "Four."));
    assert_eq!(said.finish, FinishReason::Stop, "<|return|> ends the reply");
    assert_eq!(said.streamed, (said.reasoning, said.answer));

    // Without the split, the markers stay hidden as control tokens: the text runs together.
    let plain = reply(&tokenizer, &ids, None);
    assert_eq!(plain.reasoning, "");
    assert_eq!(
        plain.answer,
        "analysisAdding two and two.assistantfinalFour."
    );
}

/// gpt-oss's tool calls in its own format: on gpt-oss's template the tools' grammar holds a reply to
/// harmony messages (analysis if the model likes, then a message to an offered function whose
/// arguments match its parameters, or a final answer where the choice allows), its markers control
/// tokens; and the reply reads back as the call, its reasoning apart.
#[test]
fn harmony_tool_calls_are_held_to_the_tools_and_read_back() {
    use serde_json::json;
    use std::sync::Arc;
    use wick::grammar::Vocabulary;
    use wick::tools::{Offered, ToolChoice, ToolUse};
    let tokenizer = Arc::new(harmony_tokenizer());
    let vocabulary = Vocabulary::new(&tokenizer).unwrap();
    let template = include_str!("goldens/chat_template/gpt-oss.jinja");
    let weather = json!({ "type": "function", "function": { "name": "get_weather",
        "parameters": { "type": "object", "properties": { "city": { "type": "string" } },
            "required": ["city"], "additionalProperties": false } } });
    let time = json!({ "type": "function", "function": { "name": "get_time" } });
    let tools = |choice| {
        let tools = vec![weather.clone(), time.clone()];
        let parallel = true; // harmony makes one call a message whatever the request allows
        ToolUse::new(
            template,
            Offered {
                tools,
                choice,
                parallel,
            },
        )
    };
    // Whether the grammar takes `reply` token by token, the last an end of generation.
    let takes = |tools: &ToolUse, reply: &str| {
        let grammar = tools.grammar().expect("a grammar");
        let end = tokenizer.token_id("<|call|>").unwrap();
        let ids = [tokenizer.encode(reply, true), vec![end]].concat();
        common::grammar_takes(&vocabulary, &tokenizer, &grammar, &ids)
    };
    let analysis = "<|channel|>analysis<|message|>The user wants Paris.<|end|><|start|>assistant";
    let call = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}";
    let final_answer = "<|channel|>final<|message|>Sunny.";
    let auto = tools(ToolChoice::Auto);
    assert!(takes(&auto, &format!("{analysis}{call}")));
    assert!(takes(&auto, call));
    assert!(takes(&auto, &format!("{analysis}{final_answer}")));
    let required = tools(ToolChoice::Required);
    assert!(takes(&required, &format!("{analysis}{call}")));
    assert!(
        !takes(&required, final_answer),
        "required: a call, not an answer"
    );
    let bad_arguments = call.replace("\"city\"", "\"town\"");
    assert!(
        !takes(&required, &bad_arguments),
        "arguments outside the parameters"
    );
    let unknown = call.replace("get_weather", "get_news");
    assert!(!takes(&required, &unknown), "a function not offered");
    let named = tools(ToolChoice::Named("get_time".into()));
    assert!(!takes(&named, call), "named: only get_time");
    let time_call = "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}";
    assert!(takes(&named, time_call));

    // Read back: the call (its arguments as OpenAI gives them), the reasoning apart.
    let prompt = "<|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant";
    let ids = tokenizer.encode(&format!("{analysis}{call}<|call|>"), true);
    let mut reply = Reply::new(100, &[]);
    reply = reply.with_reasoning(Channels::after(Format::Harmony, prompt), &tokenizer);
    let sampler = Sampler::new(SamplerConfig::greedy());
    let mut on_text = |_: wick::reply::Piece| true;
    let finish = ids
        .iter()
        .find_map(|&id| reply.push(&tokenizer, (id, None), &sampler, true, &mut on_text))
        .unwrap_or(FinishReason::Length);
    assert_eq!(finish, FinishReason::Stop, "<|call|> ends the reply");
    let completion = reply.finish(finish, &tokenizer, &mut on_text);
    assert_eq!(completion.reasoning, "The user wants Paris.");
    let answer = wick::openai::Answer::of(&completion, Some(&auto));
    assert_eq!(answer.finish_reason, "tool_calls");
    assert_eq!(answer.calls.len(), 1);
    assert_eq!(answer.calls[0].name, "get_weather");
    assert_eq!(answer.calls[0].arguments, r#"{"city":"Paris"}"#);
    assert_eq!(answer.content, "");
}

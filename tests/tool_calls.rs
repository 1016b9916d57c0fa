//! Tool calls in Qwen 2.5's own `<tool_call>` blocks, held by the grammar the request's choice gives
//! and read back, on the real model's vocabulary and template (no GPU: the grammar walks the reply's
//! tokens as a constrained reply would). Several calls a reply where the request allows them
//! (OpenAI's `parallel_tool_calls`, the default), one where it does not.

use crate::common;

use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use wick::grammar::{Constraint, Vocabulary};
use wick::tokenizer::Tokenizer;
use wick::tools::{Offered, ToolChoice, ToolUse};

const TEMPLATE: &str = include_str!("goldens/chat_template/qwen2.5.jinja");

fn qwen25_tokenizer() -> Tokenizer {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    common::tokenizer_of(&root.join("models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
}

fn weather() -> Value {
    json!({ "type": "function", "function": { "name": "get_weather",
        "parameters": { "type": "object", "properties": { "city": { "type": "string" } },
            "required": ["city"], "additionalProperties": false } } })
}

/// A call as the grammar has the model write it: JSON with a space after each comma and colon, as
/// the template writes earlier calls.
fn block(city: &str) -> String {
    let call = json!({ "name": "get_weather", "arguments": { "city": city } });
    let call = serde_json::to_string(&call).unwrap();
    let call = call.replace("\",\"", "\", \"").replace("\":", "\": ");
    format!("<tool_call>\n{call}\n</tool_call>")
}

/// The weather tool offered to Qwen 2.5's template.
fn tools(choice: ToolChoice, parallel: bool) -> ToolUse {
    let tools = vec![weather()];
    let offered = Offered {
        tools,
        choice,
        parallel,
    };
    ToolUse::new(TEMPLATE, offered)
}

#[test]
fn tagged_calls_are_several_where_the_request_allows_and_one_where_not() {
    let tokenizer = Arc::new(qwen25_tokenizer());
    let vocabulary = Vocabulary::new(&tokenizer).unwrap();
    let end = tokenizer.end_of_generation_ids()[0];
    // Whether the grammar takes `reply` token by token and then an end of generation.
    let takes = |tools: &ToolUse, reply: &str| {
        let grammar = tools.grammar().expect("a grammar");
        let ids = [tokenizer.encode(reply, false), vec![end]].concat();
        common::grammar_takes(&vocabulary, &tokenizer, &grammar, &ids)
    };
    let one = block("Paris");
    let two = format!("{}\n{}", block("Paris"), block("Rome"));
    let three = format!("{two}\n{}", block("Oslo"));
    for choice in [ToolChoice::Auto, ToolChoice::Required] {
        let parallel = tools(choice.clone(), true);
        assert!(takes(&parallel, &one), "{choice:?}: one call");
        assert!(takes(&parallel, &two), "{choice:?}: two calls");
        assert!(takes(&parallel, &three), "{choice:?}: three calls");
        assert!(
            !takes(
                &parallel,
                &format!("{}\n\n{}", block("Paris"), block("Rome"))
            ),
            "{choice:?}: calls one a line, as the template writes them"
        );
        let single = tools(choice.clone(), false);
        assert!(takes(&single, &one), "{choice:?}: one call");
        assert!(!takes(&single, &two), "{choice:?}, not parallel: one call");
    }
    // Text, then calls: the text ends where the first tag comes.
    let auto = tools(ToolChoice::Auto, true);
    assert!(takes(&auto, &format!("Let me look.{two}")));
    assert!(takes(&auto, &format!("Let me look.\n{one}")));
    assert!(takes(&auto, &format!("If a < b, look.\n{one}")));
    assert!(!takes(&auto, &format!("Let me look.\n{two}\nDone.")));
    // Or text alone, or a call's JSON without its tags.
    assert!(takes(&auto, "It is sunny."));
    assert!(takes(&auto, "<b>Sunny</b> if a < b"));
    assert!(takes(
        &auto,
        r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#
    ));
    assert!(!takes(&tools(ToolChoice::Required, true), "It is sunny."));

    // Read back: every call, in order, the text before them apart.
    let read = auto.read(&format!("Let me look.{three}"), &[]);
    assert_eq!(read.content.as_deref(), Some("Let me look."));
    let cities: Vec<Value> = (read.calls.iter())
        .map(|c| {
            assert_eq!(c.name, "get_weather");
            serde_json::from_str::<Value>(&c.arguments).unwrap()["city"].clone()
        })
        .collect();
    assert_eq!(cities, [json!("Paris"), json!("Rome"), json!("Oslo")]);
}

/// A speculative check walks a draft's tokens through the grammar and takes them back
/// (`Constraint::rollback`): the lazy rule for text before calls is taken back as the rest is, and
/// the reply goes on from where it was.
#[test]
fn drafts_walked_and_taken_back_leave_the_tools_grammar_where_it_was() {
    let tokenizer = Arc::new(qwen25_tokenizer());
    let vocabulary = Vocabulary::new(&tokenizer).unwrap();
    let n_vocab = tokenizer.vocab_size() as u32;
    let grammar = tools(ToolChoice::Auto, true).grammar().unwrap();
    let mut constraint = Constraint::new(&vocabulary, &tokenizer, &grammar).unwrap();
    let reply = format!("Let me look.{}\n{}", block("Paris"), block("Rome"));
    let ids = tokenizer.encode(&reply, false);
    for i in 0..ids.len() {
        let draft = &ids[i..(i + 4).min(ids.len())];
        for &id in draft {
            constraint.accept(id).unwrap();
        }
        constraint.rollback(draft.len()).unwrap();
        let bits = constraint.allowed_bits(n_vocab).unwrap();
        assert!(Constraint::allows(&bits, ids[i]), "token {i} after a draft");
        constraint.accept(ids[i]).unwrap();
    }
    let bits = constraint.allowed_bits(n_vocab).unwrap();
    let end = tokenizer.end_of_generation_ids()[0];
    assert!(Constraint::allows(&bits, end), "the reply may end");
}

/// Qwen 2.5's template writes an earlier turn's calls one a line, the separator the grammar holds
/// a reply's calls to, so that the model is asked for several calls as it reads its past ones.
#[test]
fn the_template_writes_several_earlier_calls_one_a_line() {
    use wick::chat_template::{render_with, ChatMessage, Extras, Limits};
    let call = |id: &str, city: &str| {
        json!({ "id": id, "type": "function",
            "function": { "name": "get_weather", "arguments": { "city": city } } })
    };
    let mut called = ChatMessage::new("assistant", "");
    called.tool_calls = vec![call("c0", "Paris"), call("c1", "Rome")];
    let messages = [
        ChatMessage::new("user", "Weather in Paris and Rome?"),
        called,
    ];
    let extras = Extras {
        tools: vec![weather()],
        ..Extras::default()
    };
    let limits = Limits::default();
    let text = render_with(TEMPLATE, &messages, &extras, false, "", "", limits).unwrap();
    let (_, reply) = text.rsplit_once("<|im_start|>assistant\n").unwrap();
    let between: Vec<&str> = reply.split("</tool_call>").skip(1).collect();
    assert_eq!(between.len(), 2, "two calls: {reply:?}");
    assert!(between[0].starts_with("\n<tool_call>\n{"), "{reply:?}");
}

/// OpenAI's `parallel_tool_calls` reaches the tools' grammar: absent, several calls may come.
#[test]
fn parallel_tool_calls_is_read_from_the_request() {
    let parallel = |field: Option<bool>| {
        let mut body = json!({ "messages": [{ "role": "user", "content": "Weather?" }],
            "tools": [weather()] });
        if let Some(p) = field {
            body["parallel_tool_calls"] = json!(p);
        }
        let request: wick::openai::ChatRequest = serde_json::from_value(body).unwrap();
        request.tools().unwrap().expect("tools offered").parallel
    };
    assert!(parallel(None));
    assert!(parallel(Some(true)));
    assert!(!parallel(Some(false)));
}

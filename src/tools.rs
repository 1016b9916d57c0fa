//! Tool calls. The tools a request offers reach the model through its chat template where the template
//! lays out tools and its model writes `<tool_call>` blocks (Qwen 2.5, Hermes-style) or harmony
//! messages to functions (gpt-oss); any other model gets them described in a system message and
//! answers in a JSON envelope, as llama.cpp's server does for templates without tools. Either way a
//! grammar holds the reply to calls of offered tools with arguments matching their parameters (or,
//! where the choice allows, to text), and the reply is read back as the calls.

use crate::chat_template::{self, ChatMessage};
use crate::grammar::{self, Grammar};
use crate::reasoning;
use serde_json::{json, Value};

/// OpenAI's `tool_choice`.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolChoice {
    /// The model does not call: tools are left out.
    None,
    /// The model may answer with text or a call.
    Auto,
    /// The model calls one of the tools.
    Required,
    /// The model calls this tool.
    Named(String),
}

/// The tools a request offers (OpenAI's `tools` entries, `{"type": "function", "function": {"name",
/// "description", "parameters"}}`), its choice, and whether a reply may make several calls
/// (OpenAI's `parallel_tool_calls`, true unless asked otherwise).
#[derive(Clone, Debug)]
pub struct Offered {
    pub tools: Vec<Value>,
    pub choice: ToolChoice,
    pub parallel: bool,
}

/// One call the reply made. It is defined beside the reader of a reply's channels, which finds
/// harmony's calls while it reads them; tool use is where callers take it from.
pub use crate::reasoning::Call;

/// A reply read as tool use: its text, and the calls it made.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub content: Option<String>,
    pub calls: Vec<Call>,
}

/// How the model writes a call.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    /// Text, then `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`, as the template shows
    /// it; several calls are blocks one a line, as the template writes an earlier turn's calls.
    Tagged,
    /// `{"tool_call": {"name": ..., "arguments": {...}}}` or `{"response": "..."}`, asked for in a system
    /// message: one call a reply.
    Envelope,
    /// Harmony: analysis, then a final message or one to a function (`<|channel|>commentary
    /// to=functions.NAME <|constrain|>json<|message|>{...}`), which the reasoning reader returns as a
    /// call (`reasoning::Channels`): one call a message, the model going on after its answer.
    Harmony,
}

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// The tools of one request and the choice, for a model whose chat template is `template`.
pub struct ToolUse {
    tools: Vec<Value>,
    choice: ToolChoice,
    parallel: bool,
    format: Format,
}

impl ToolUse {
    pub fn new(template: &str, offered: Offered) -> ToolUse {
        let takes_tools = chat_template::takes_tools(template);
        let harmony = reasoning::Format::of_template(template) == Some(reasoning::Format::Harmony);
        ToolUse {
            tools: offered.tools,
            choice: offered.choice,
            parallel: offered.parallel,
            format: match (takes_tools, harmony, template.contains(OPEN)) {
                (true, true, _) => Format::Harmony,
                (true, _, true) => Format::Tagged,
                _ => Format::Envelope,
            },
        }
    }

    /// The tools the chat template lays out itself (none where they go in a system message).
    pub fn template_tools(&self) -> &[Value] {
        match (self.format, &self.choice) {
            (_, ToolChoice::None) | (Format::Envelope, _) => &[],
            (Format::Tagged | Format::Harmony, _) => &self.tools,
        }
    }

    /// The conversation as the model reads it: for the envelope, with the tools and the reply's form
    /// described in the system message (added, or put after the caller's).
    pub fn messages(&self, messages: &[ChatMessage]) -> Vec<ChatMessage> {
        let mut out = messages.to_vec();
        if self.format != Format::Envelope || self.choice == ToolChoice::None {
            return out;
        }
        let listed: Vec<String> = self
            .tools
            .iter()
            .map(|t| t["function"].to_string())
            .collect();
        let form = match self.choice {
            ToolChoice::Auto => {
                r#"{"tool_call": {"name": "<tool name>", "arguments": {...}}} to call a tool, or {"response": "<your answer>"} to answer directly"#
            }
            _ => r#"{"tool_call": {"name": "<tool name>", "arguments": {...}}}"#,
        };
        let text = format!(
            "You can call these tools:\n{}\n\nReply with JSON only: {form}.",
            listed.join("\n")
        );
        match out.first_mut() {
            Some(first) if first.role == "system" => {
                first.content = format!("{}\n\n{text}", first.content);
            }
            _ => out.insert(0, ChatMessage::new("system", text)),
        }
        // Calls and tool answers of earlier turns, in the envelope's words (an envelope a line where
        // a turn made several calls).
        for m in &mut out {
            if !m.tool_calls.is_empty() {
                let envelopes: Vec<String> = (m.tool_calls.iter())
                    .map(|c| &c["function"])
                    .map(|call| {
                        json!({ "tool_call": { "name": call["name"], "arguments": call["arguments"] } })
                            .to_string()
                    })
                    .collect();
                m.content = envelopes.join("\n");
                m.tool_calls.clear();
            }
            if m.role == "tool" {
                m.role = "user".into();
                m.content = format!("The tool answered: {}", m.content);
            }
        }
        out
    }

    /// What the reply must match; none where the model may not call.
    pub fn grammar(&self) -> Option<Grammar> {
        if self.format == Format::Harmony {
            return self.harmony_grammar();
        }
        let call = self.call_schema()?;
        Some(match self.format {
            Format::Tagged => {
                // A block is its tag, then `rest`; several calls are blocks one a line. Text before
                // calls (`prose`) is a lazy rule that ends at the first tag: as one greedy lexeme it
                // took the tag's first bytes as its own and never let the tag through. It does not
                // start with `<`, so that a reply opening with the tag has one reading. Small models
                // often write the call's JSON without its tags: where text may come instead of a
                // call, text cannot start as JSON does, so such a reply is a call too.
                let call = grammar::compact_json(call);
                let rest = format!(r#""\n" call "\n{CLOSE}""#);
                let blocks = match self.parallel {
                    true => format!(r#"{rest} ("\n" "{OPEN}" {rest})*"#),
                    false => rest,
                };
                let start = match self.choice {
                    ToolChoice::Auto => {
                        format!(r#"start: TEXT | "{OPEN}" {blocks} | prose {blocks} | call"#)
                    }
                    _ => format!(r#"start: "{OPEN}" {blocks}"#),
                };
                Grammar::Lark(format!(
                    "{start}\ncall: %json {call}\nprose[suffix=\"{OPEN}\"]: /[^{{\\s<](?s:.*)/\n\
                     TEXT: /[^{{\\s](?s:.*)/ & ~/(?s:.*){OPEN}(?s:.*)/\n"
                ))
            }
            Format::Envelope => {
                let called = json!({ "type": "object", "properties": { "tool_call": call },
                    "required": ["tool_call"], "additionalProperties": false });
                let answered = json!({ "type": "object",
                    "properties": { "response": { "type": "string" } },
                    "required": ["response"], "additionalProperties": false });
                Grammar::JsonSchema(match self.choice {
                    ToolChoice::Auto => json!({ "anyOf": [called, answered] }),
                    _ => called,
                })
            }
            Format::Harmony => unreachable!("harmony_grammar"),
        })
    }

    /// Harmony's reply after the prompt's `<|start|>assistant`: analysis if the model likes, then
    /// (where the choice allows) a final answer, or a message to one of the tools with arguments
    /// that match its parameters. The markers are control tokens, named as such (`<|channel|>`).
    fn harmony_grammar(&self) -> Option<Grammar> {
        let calls: Vec<String> = (self.allowed())
            .map(|t| {
                let f = &t["function"];
                let name = f["name"].as_str().unwrap_or_default();
                let parameters = match &f["parameters"] {
                    Value::Null => json!({ "type": "object" }),
                    p => p.clone(),
                };
                let parameters = grammar::tight_json(parameters);
                let to = reasoning::TO_FUNCTION;
                let name =
                    serde_json::to_string(&format!("commentary {to}{name} ")).expect("a string");
                format!("<|channel|> {name} <|constrain|> \"json\" <|message|> %json {parameters}")
            })
            .collect();
        if calls.is_empty() {
            return None;
        }
        let answer = match self.choice {
            ToolChoice::Auto => "final | ",
            _ => "",
        };
        Some(Grammar::Lark(format!(
            "start: analysis? ({answer}call)\n\
             analysis: <|channel|> \"analysis\" <|message|> TEXT <|end|> <|start|> \"assistant\"\n\
             final: <|channel|> \"final\" <|message|> TEXT\n\
             call: {}\n\
             TEXT: /(?s:.*)/\n",
            calls.join("\n    | ")
        )))
    }

    /// The offered tools the choice allows the model to call.
    fn allowed(&self) -> impl Iterator<Item = &Value> {
        self.tools.iter().filter(|t| match &self.choice {
            ToolChoice::None => false,
            ToolChoice::Named(name) => t["function"]["name"] == json!(name),
            _ => true,
        })
    }

    /// A call of one of the tools the choice allows, its arguments matching the tool's parameters.
    fn call_schema(&self) -> Option<Value> {
        let calls: Vec<Value> = (self.allowed())
            .map(|t| {
                let f = &t["function"];
                let parameters = match &f["parameters"] {
                    Value::Null => json!({ "type": "object" }),
                    p => p.clone(),
                };
                json!({ "type": "object",
                    "properties": { "name": { "const": f["name"] }, "arguments": parameters },
                    "required": ["name", "arguments"], "additionalProperties": false })
            })
            .collect();
        match calls.len() {
            0 => None,
            1 => calls.into_iter().next(),
            _ => Some(json!({ "anyOf": calls })),
        }
    }

    /// The reply read back: text and calls, from its answer `text` and the calls its format marked
    /// itself (`Completion::calls`: harmony's). A reply that was cut short and does not parse is text.
    pub fn read(&self, text: &str, marked: &[Call]) -> Reply {
        let as_text = || Reply {
            content: Some(text.to_string()),
            calls: Vec::new(),
        };
        if self.choice == ToolChoice::None {
            return as_text();
        }
        match self.format {
            Format::Harmony => {
                let calls: Vec<Call> = (marked.iter())
                    .filter_map(|c| {
                        let arguments: Value = serde_json::from_str(&c.arguments).ok()?;
                        let name = c.name.clone();
                        Some(Call {
                            name,
                            arguments: arguments.to_string(),
                        })
                    })
                    .collect();
                let text = text.trim();
                Reply {
                    content: (!text.is_empty() || calls.is_empty()).then(|| text.to_string()),
                    calls,
                }
            }
            Format::Tagged => {
                let Some((before, blocks)) = text.split_once(OPEN) else {
                    return match parse_call(text.trim()) {
                        Some(call) => Reply {
                            content: None,
                            calls: vec![call],
                        },
                        None => as_text(),
                    };
                };
                let Some(calls) = tagged_calls(blocks) else {
                    return as_text();
                };
                let before = before.trim();
                Reply {
                    content: (!before.is_empty()).then(|| before.to_string()),
                    calls,
                }
            }
            Format::Envelope => {
                let Ok(value) = serde_json::from_str::<Value>(text) else {
                    return as_text();
                };
                if let Some(call) = value
                    .get("tool_call")
                    .and_then(|c| parse_call(&c.to_string()))
                {
                    return Reply {
                        content: None,
                        calls: vec![call],
                    };
                }
                match value.get("response").and_then(Value::as_str) {
                    Some(answer) => Reply {
                        content: Some(answer.to_string()),
                        calls: Vec::new(),
                    },
                    None => as_text(),
                }
            }
        }
    }
}

/// The calls of a reply's `<tool_call>` blocks, `text` starting inside the first; None unless every
/// block is closed and holds a call, with nothing but white space between and after them.
fn tagged_calls(text: &str) -> Option<Vec<Call>> {
    let mut calls = Vec::new();
    for block in text.split(OPEN) {
        let (call, after) = block.split_once(CLOSE)?;
        if !after.trim().is_empty() {
            return None;
        }
        calls.push(parse_call(call.trim())?);
    }
    Some(calls)
}

fn parse_call(json: &str) -> Option<Call> {
    let value: Value = serde_json::from_str(json).ok()?;
    Some(Call {
        name: value.get("name")?.as_str()?.to_string(),
        arguments: value.get("arguments")?.to_string(),
    })
}

/// Replies read back as each format writes a call: the forms Qwen 2.5's template shows its model
/// (`<tool_call>` blocks), the JSON envelope a system message asks other models for, and the text
/// that is no call. The templates are the real ones (tests/goldens/chat_template).
#[cfg(test)]
mod tests {
    use super::*;

    const QWEN25: &str = include_str!("../tests/goldens/chat_template/qwen2.5.jinja");
    const SMOLLM2: &str = include_str!("../tests/goldens/chat_template/smollm2.jinja");
    const GPT_OSS: &str = include_str!("../tests/goldens/chat_template/gpt-oss.jinja");

    fn weather() -> Value {
        json!({ "type": "function", "function": { "name": "get_weather",
            "parameters": { "type": "object", "properties": { "city": { "type": "string" } },
                "required": ["city"] } } })
    }

    fn uses(template: &str, choice: ToolChoice) -> ToolUse {
        ToolUse::new(
            template,
            Offered {
                tools: vec![weather()],
                choice,
                parallel: true,
            },
        )
    }

    fn call(name: &str, arguments: &str) -> Call {
        Call {
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// A reply that is one call and no text.
    fn called(name: &str, arguments: &str) -> Reply {
        Reply {
            content: None,
            calls: vec![call(name, arguments)],
        }
    }

    fn text(s: &str) -> Reply {
        Reply {
            content: Some(s.into()),
            calls: Vec::new(),
        }
    }

    #[test]
    fn a_tagged_call_is_read_with_the_text_before_it() {
        let tools = uses(QWEN25, ToolChoice::Auto);
        assert_eq!(
            tools.template_tools().len(),
            1,
            "Qwen 2.5's template lays out tools"
        );
        let block = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        let called = called("get_weather", r#"{"city":"Paris"}"#);
        assert_eq!(tools.read(block, &[]), called);
        let said = tools.read(&format!("Let me look.\n{block}"), &[]);
        assert_eq!(said.content.as_deref(), Some("Let me look."));
        assert_eq!(said.calls, called.calls);
        // Small models drop the tags: the call's JSON alone is a call.
        let bare = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        assert_eq!(tools.read(bare, &[]), called);
    }

    #[test]
    fn tagged_calls_one_a_line_are_read_in_order() {
        let tools = uses(QWEN25, ToolChoice::Auto);
        let block = |city: &str| {
            format!("<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{city}\"}}}}\n</tool_call>")
        };
        let reply = format!("Both cities:\n{}\n{}\n", block("Paris"), block("Rome"));
        let read = tools.read(&reply, &[]);
        assert_eq!(read.content.as_deref(), Some("Both cities:"));
        assert_eq!(
            read.calls,
            [
                call("get_weather", r#"{"city":"Paris"}"#),
                call("get_weather", r#"{"city":"Rome"}"#)
            ]
        );
        // A second block cut short, or text between two blocks: the reply is no whole set of calls.
        for reply in [
            format!("{}\n<tool_call>\n{{\"name\": \"get_wea", block("Paris")),
            format!("{}\nand then\n{}", block("Paris"), block("Rome")),
        ] {
            assert_eq!(tools.read(&reply, &[]), text(&reply), "{reply:?}");
        }
    }

    #[test]
    fn a_tagged_reply_that_is_no_whole_call_is_text() {
        let tools = uses(QWEN25, ToolChoice::Auto);
        for reply in [
            "It is sunny in Paris.",
            "<tool_call>\n{\"name\": \"get_wea",
            "<tool_call>\n{\"city\": \"Paris\"}\n</tool_call>",
        ] {
            assert_eq!(tools.read(reply, &[]), text(reply), "{reply:?}");
        }
        // With tool_choice none the template shows no tools, and a call-like reply stays text.
        let none = uses(QWEN25, ToolChoice::None);
        assert!(none.template_tools().is_empty());
        assert!(none.grammar().is_none());
        let bare = r#"{"name": "get_weather", "arguments": {}}"#;
        assert_eq!(none.read(bare, &[]), text(bare));
    }

    #[test]
    fn an_envelope_is_asked_for_in_a_system_message_and_read_back() {
        let tools = uses(SMOLLM2, ToolChoice::Required);
        assert!(
            tools.template_tools().is_empty(),
            "SmolLM2's template lays out no tools"
        );
        let asked = tools.messages(&[ChatMessage::new("user", "Weather in Paris?")]);
        assert_eq!(asked.len(), 2);
        assert_eq!(asked[0].role, "system");
        assert!(
            asked[0].content.contains(r#""name":"get_weather""#),
            "{}",
            asked[0].content
        );
        let reply = r#"{"tool_call": {"name": "get_weather", "arguments": {"city": "Rome"}}}"#;
        assert_eq!(
            tools.read(reply, &[]),
            called("get_weather", r#"{"city":"Rome"}"#)
        );
        assert_eq!(
            tools.read(r#"{"response": "It is sunny."}"#, &[]),
            text("It is sunny.")
        );
        for reply in [
            "It is sunny.",
            r#"{"tool_call": {"name": "get_wea"#,
            r#"{"other": 1}"#,
        ] {
            assert_eq!(tools.read(reply, &[]), text(reply), "{reply:?}");
        }
    }

    #[test]
    fn an_earlier_call_and_its_answer_go_back_in_the_envelopes_words() {
        let tools = uses(SMOLLM2, ToolChoice::Auto);
        let mut called = ChatMessage::new("assistant", "");
        let weather_in = |id: &str, city: &str| {
            json!({ "id": id, "type": "function",
                "function": { "name": "get_weather", "arguments": { "city": city } } })
        };
        called.tool_calls = vec![weather_in("c0", "Paris"), weather_in("c1", "Rome")];
        let answer = ChatMessage::new("tool", r#"{"sky": "clear"}"#);
        let asked = tools.messages(&[
            ChatMessage::new("system", "Be brief."),
            ChatMessage::new("user", "Weather in Paris?"),
            called,
            answer,
        ]);
        assert!(asked[0]
            .content
            .starts_with("Be brief.\n\nYou can call these tools:"));
        assert!(asked[0]
            .content
            .contains(r#"{"response": "<your answer>"}"#));
        // Each call an envelope of its own, a line each.
        let calls: Vec<Value> = (asked[2].content.lines())
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let envelope =
            |city| json!({ "tool_call": { "name": "get_weather", "arguments": { "city": city } } });
        assert_eq!(calls, [envelope("Paris"), envelope("Rome")]);
        assert!(asked[2].tool_calls.is_empty());
        assert_eq!(asked[3].role, "user");
        assert_eq!(asked[3].content, r#"The tool answered: {"sky": "clear"}"#);
    }

    #[test]
    fn harmonys_marked_calls_are_kept_where_their_arguments_are_json() {
        let tools = uses(GPT_OSS, ToolChoice::Auto);
        assert_eq!(
            tools.template_tools().len(),
            1,
            "gpt-oss's template lays out tools"
        );
        let marked = [
            call("get_weather", r#"{"city": "Oslo"}"#),
            call("get_weather", r#"{"city": "Os"#),
        ];
        assert_eq!(
            tools.read(" ", &marked),
            called("get_weather", r#"{"city":"Oslo"}"#)
        );
        assert_eq!(tools.read("Sunny.", &[]), text("Sunny."));
    }
}

//! OpenAI's request shapes, as clients send them, and the one place they are checked (the sampling
//! fields in settings.rs): `wick serve` and the browser package both hand the request body here. Unknown fields are ignored (clients send
//! extras), except those that would change the answer where Wick cannot honour them: those are an
//! `InvalidRequest` naming the field, as is a value out of range; a known field with the wrong type
//! fails to parse.

pub mod embeddings;
pub mod log_probs;
mod settings;

pub use settings::{sampler, Answer, Settings};

use crate::chat_template::{self, ChatMessage, Variables};
use crate::grammar::Grammar;
use crate::reply::Completion;
use crate::tools::{Offered, ToolChoice};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub tools: Option<Vec<Tool>>,
    pub tool_choice: Option<ToolChoiceField>,
    /// Whether a reply may call several tools at once (OpenAI's default: it may).
    pub parallel_tool_calls: Option<bool>,
    /// Variables for the chat template, as llama.cpp's server takes them (`{"enable_thinking":
    /// false}` for Qwen 3 and Gemma 4).
    pub chat_template_kwargs: Option<serde_json::Value>,
    /// OpenAI's `low`, `medium` or `high`: the template's `reasoning_effort` (gpt-oss reads it).
    pub reasoning_effort: Option<String>,
    #[serde(flatten)]
    pub sampling: Sampling,
}

/// A tool the model may call: OpenAI's `{"type": "function", "function": {...}}`.
#[derive(Deserialize, Serialize)]
pub struct Tool {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionDefinition,
}

#[derive(Deserialize, Serialize)]
pub struct FunctionDefinition {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A JSON schema of the arguments object; absent: any object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<serde_json::Value>,
}

/// `tool_choice`: "none", "auto", "required", or `{"type": "function", "function": {"name"}}`.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum ToolChoiceField {
    Mode(String),
    Named { function: NamedFunction },
}

#[derive(Deserialize)]
pub struct NamedFunction {
    pub name: String,
}

/// A call in an assistant message, as OpenAI writes it: the arguments are a JSON object as text.
#[derive(Deserialize, Serialize, Clone)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: CalledFunction,
}

#[derive(Deserialize, Serialize, Clone)]
pub struct CalledFunction {
    pub name: String,
    pub arguments: String,
}

#[derive(Deserialize)]
pub struct CompletionRequest {
    pub prompt: Strings,
    #[serde(flatten)]
    pub sampling: Sampling,
}

/// What chat and text completions share.
#[derive(Deserialize)]
pub struct Sampling {
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    /// Over the last 64 tokens, from -2 to 2 (0: none).
    pub presence_penalty: Option<f32>,
    pub frequency_penalty: Option<f32>,
    /// Beyond OpenAI's fields, as llama.cpp's server takes them: top-k (0: none, the default),
    /// min-p (0 unless given) and the repetition penalty over the last 64 tokens (1: none).
    pub top_k: Option<u32>,
    pub min_p: Option<f32>,
    pub repeat_penalty: Option<f32>,
    pub max_tokens: Option<u32>,
    pub max_completion_tokens: Option<u32>,
    pub seed: Option<u64>,
    pub stop: Option<Strings>,
    pub n: Option<u32>,
    #[serde(default)]
    pub stream: bool,
    pub stream_options: Option<StreamOptions>,
    pub response_format: Option<ResponseFormat>,
    /// What the reply is expected to say (OpenAI's predicted outputs).
    pub prediction: Option<PredictionField>,
    /// Token id (a string of digits) to what is added to its logit, -100 to 100.
    pub logit_bias: Option<BTreeMap<String, f32>>,
    /// Every other field, for the check that refuses those that would change the answer.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// What the reply must be: free text, any JSON object, or JSON matching a schema.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    Text,
    JsonObject,
    JsonSchema { json_schema: JsonSchemaFormat },
}

/// `prediction`: `{"type": "content", "content": TEXT}`, the content a string or text parts.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PredictionField {
    Content { content: Content },
}

#[derive(Deserialize)]
pub struct JsonSchemaFormat {
    pub name: String,
    /// Absent: any JSON value is allowed, as OpenAI reads it.
    pub schema: Option<serde_json::Value>,
    /// Wick always keeps to the schema, strict or not.
    pub strict: Option<bool>,
}

#[derive(Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Deserialize)]
pub struct Message {
    pub role: String,
    pub content: Option<Content>,
    /// An assistant's calls.
    pub tool_calls: Option<Vec<ToolCall>>,
    /// A tool's answer: the call it answers.
    pub tool_call_id: Option<String>,
}

/// A message's content: a string, or parts: text, and images (`image_url`), which stand in the
/// text as `vision::IMAGE_MARKER` (the session puts each image's tokens there).
#[derive(Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Deserialize)]
pub struct Part {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
    pub image_url: Option<ImageUrl>,
}

#[derive(Deserialize)]
pub struct ImageUrl {
    /// A `data:` URL: the image's bytes in base64 (nothing is fetched from elsewhere).
    pub url: String,
}

/// A string or a list of them, as `prompt` and `stop` may be.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum Strings {
    One(String),
    Many(Vec<String>),
}

impl Strings {
    fn into_vec(self) -> Vec<String> {
        match self {
            Strings::One(s) => vec![s],
            Strings::Many(v) => v,
        }
    }
}

#[derive(Serialize, Clone, Copy, Debug)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
    pub prompt_tokens_details: PromptTokensDetails,
    /// Where the request gave a prediction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

/// What the checks made of a request's prediction (`Session::predict`): its tokens drafted and
/// kept, and those drafted and not kept. A server that does not speculate drafts none.
#[derive(Serialize, Clone, Copy, Debug)]
pub struct CompletionTokensDetails {
    pub accepted_prediction_tokens: usize,
    pub rejected_prediction_tokens: usize,
}

#[derive(Serialize, Clone, Copy, Debug)]
pub struct PromptTokensDetails {
    /// Prompt tokens the cache already held from the conversation before, not run again.
    pub cached_tokens: usize,
}

impl Usage {
    pub fn of(completion: &Completion) -> Usage {
        let (prompt, generated) = (completion.prompt_tokens, completion.tokens.len());
        Usage {
            prompt_tokens: prompt,
            completion_tokens: generated,
            total_tokens: prompt + generated,
            prompt_tokens_details: PromptTokensDetails {
                cached_tokens: prompt - completion.prompt_processed.min(prompt),
            },
            completion_tokens_details: (completion.prediction.as_ref()).map(|p| {
                CompletionTokensDetails {
                    accepted_prediction_tokens: p.accepted,
                    rejected_prediction_tokens: p.rejected,
                }
            }),
        }
    }
}

/// A request that parsed but asks for something out of range or unsupported.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct InvalidRequest {
    pub message: String,
    /// The field at fault, as OpenAI's errors name it.
    pub param: &'static str,
}

fn invalid(message: impl Into<String>, param: &'static str) -> InvalidRequest {
    InvalidRequest {
        message: message.into(),
        param,
    }
}

impl ChatRequest {
    /// The conversation, for the chat template.
    pub fn conversation(&self) -> Result<Vec<ChatMessage>, InvalidRequest> {
        if self.messages.is_empty() {
            return Err(invalid("messages must not be empty", "messages"));
        }
        self.messages
            .iter()
            .map(|m| {
                let content = m.content.as_ref().map(Content::text).transpose()?;
                let tool_calls = m.tool_calls.iter().flatten().map(|call| {
                    let arguments: serde_json::Value =
                        serde_json::from_str(&call.function.arguments).map_err(|_| {
                            invalid("a tool call's arguments must be a JSON object", "messages")
                        })?;
                    Ok(serde_json::json!({ "id": call.id, "type": "function",
                        "function": { "name": call.function.name, "arguments": arguments } }))
                });
                Ok(ChatMessage {
                    role: m.role.clone(),
                    content: content.unwrap_or_default(),
                    tool_calls: tool_calls.collect::<Result<_, InvalidRequest>>()?,
                    tool_call_id: m.tool_call_id.clone(),
                    // The images stay bytes until the server decodes them (`images`).
                    images: Vec::new(),
                })
            })
            .collect()
    }

    /// The bytes of each image the messages' content parts carry, in order (each at an
    /// `IMAGE_MARKER` in its message's text). Only `data:` URLs in base64: the server fetches nothing.
    pub fn images(&self) -> Result<Vec<Vec<u8>>, InvalidRequest> {
        let parts = self.messages.iter().filter_map(|m| match &m.content {
            Some(Content::Parts(parts)) => Some(parts),
            _ => None,
        });
        parts
            .flatten()
            .filter(|p| p.kind == "image_url")
            .map(|p| match &p.image_url {
                Some(image) => data_url_bytes(&image.url),
                None => Err(invalid("an image_url part needs its image_url", "messages")),
            })
            .collect()
    }

    /// The variables the chat template gets besides the messages: `chat_template_kwargs`, and
    /// `reasoning_effort`. Refused: kwargs that are not an object or set a variable Wick sets
    /// itself, an effort other than low, medium or high.
    pub fn template_variables(&self) -> Result<Variables, InvalidRequest> {
        let field = "chat_template_kwargs";
        let mut variables = match &self.chat_template_kwargs {
            None | Some(serde_json::Value::Null) => Variables::new(),
            Some(kwargs) => chat_template::variables(kwargs)
                .map_err(|why| invalid(format!("{field} {why}"), field))?,
        };
        if let Some(effort) = &self.reasoning_effort {
            if !["low", "medium", "high"].contains(&effort.as_str()) {
                let message = format!("reasoning_effort is low, medium or high, not {effort:?}");
                return Err(invalid(message, "reasoning_effort"));
            }
            variables.insert("reasoning_effort".into(), effort.as_str().into());
        }
        Ok(variables)
    }

    /// The tools the model may call and how; None where the request offers none. Refused: a choice
    /// that names no offered tool, or that needs tools where none are offered, and tools with a
    /// `response_format` other than text.
    pub fn tools(&self) -> Result<Option<Offered>, InvalidRequest> {
        let tools = self.tools.as_deref().unwrap_or_default();
        let choice = match &self.tool_choice {
            None => ToolChoice::Auto,
            Some(ToolChoiceField::Mode(mode)) => match mode.as_str() {
                "none" => ToolChoice::None,
                "auto" => ToolChoice::Auto,
                "required" => ToolChoice::Required,
                other => {
                    return Err(invalid(
                        format!("tool_choice is none, auto, required or a function, not {other:?}"),
                        "tool_choice",
                    ))
                }
            },
            Some(ToolChoiceField::Named { function }) => {
                if !tools.iter().any(|t| t.function.name == function.name) {
                    return Err(invalid(
                        format!(
                            "tool_choice names {:?}, which is not among the tools",
                            function.name
                        ),
                        "tool_choice",
                    ));
                }
                ToolChoice::Named(function.name.clone())
            }
        };
        if tools.is_empty() {
            return match choice {
                ToolChoice::None | ToolChoice::Auto => Ok(None),
                _ => Err(invalid(
                    "tool_choice asks for a call, but no tools are given",
                    "tool_choice",
                )),
            };
        }
        if let Some(t) = tools.iter().find(|t| t.kind != "function") {
            return Err(invalid(
                format!("tools of type {:?} are not supported", t.kind),
                "tools",
            ));
        }
        let formatted = !matches!(
            self.sampling.response_format,
            None | Some(ResponseFormat::Text)
        );
        if formatted && choice != ToolChoice::None {
            return Err(invalid(
                "response_format cannot be combined with tools",
                "response_format",
            ));
        }
        let tools = tools
            .iter()
            .map(|t| serde_json::to_value(t).expect("a tool serializes"))
            .collect();
        Ok(Some(Offered {
            tools,
            choice,
            parallel: self.parallel_tool_calls.unwrap_or(true),
        }))
    }
}

impl CompletionRequest {
    /// The one prompt.
    pub fn prompt(&self) -> Result<String, InvalidRequest> {
        match &self.prompt {
            Strings::One(p) => Ok(p.clone()),
            Strings::Many(v) if v.len() == 1 => Ok(v[0].clone()),
            Strings::Many(_) => Err(invalid(
                "only one prompt per request is supported",
                "prompt",
            )),
        }
    }
}

impl Content {
    fn text(&self) -> Result<String, InvalidRequest> {
        match self {
            Content::Text(t) => Ok(t.clone()),
            Content::Parts(parts) => parts
                .iter()
                .map(|p| match (p.kind.as_str(), &p.text) {
                    ("text", Some(t)) => Ok(t.as_str()),
                    ("image_url", _) => Ok(crate::vision::IMAGE_MARKER),
                    _ => Err(invalid(
                        format!("content parts of type {:?} are not supported", p.kind),
                        "messages",
                    )),
                })
                .collect(),
        }
    }
}

/// Gives each message the images its content's markers stand for (`vision::IMAGE_MARKER`, which
/// image parts become), in order: `images` are the request's images, decoded.
pub fn place_images(
    messages: &mut [ChatMessage],
    images: Vec<crate::vision::Image>,
) -> Result<(), InvalidRequest> {
    let marker = crate::vision::IMAGE_MARKER;
    if images.is_empty() {
        return Ok(()); // a marker typed as text stays text
    }
    let markers: usize = messages
        .iter()
        .map(|m| m.content.matches(marker).count())
        .sum();
    if markers != images.len() {
        return Err(invalid(
            format!(
                "the messages have {markers} image markers ({marker}) for {} images",
                images.len()
            ),
            "messages",
        ));
    }
    let mut images = images.into_iter();
    for m in messages {
        let n = m.content.matches(marker).count();
        m.images = images.by_ref().take(n).collect();
    }
    Ok(())
}

/// The bytes of a base64 `data:` URL.
fn data_url_bytes(url: &str) -> Result<Vec<u8>, InvalidRequest> {
    use base64::Engine as _;
    let Some(rest) = url.strip_prefix("data:") else {
        let scheme = url.split(':').next().unwrap_or_default();
        return Err(invalid(
            format!("images must come as data: URLs (base64); {scheme}: URLs are not fetched"),
            "messages",
        ));
    };
    let Some((_, data)) = rest.split_once(";base64,") else {
        return Err(invalid(
            "an image's data: URL must be base64 (;base64,)",
            "messages",
        ));
    };
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| {
            invalid(
                format!("an image's base64 does not decode: {e}"),
                "messages",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_variables_are_checked() {
        let variables = |extra: &str| {
            let json = format!(r#"{{"messages": [{{"role": "user", "content": "hi"}}]{extra}}}"#);
            serde_json::from_str::<ChatRequest>(&json)
                .unwrap()
                .template_variables()
        };
        assert!(variables("").unwrap().is_empty());
        let set = variables(
            r#", "chat_template_kwargs": {"enable_thinking": false}, "reasoning_effort": "high""#,
        )
        .unwrap();
        assert_eq!(set["enable_thinking"], false);
        assert_eq!(set["reasoning_effort"], "high");
        for (extra, param) in [
            (r#", "chat_template_kwargs": [1]"#, "chat_template_kwargs"),
            (
                r#", "chat_template_kwargs": {"messages": []}"#,
                "chat_template_kwargs",
            ),
            (r#", "reasoning_effort": "extreme""#, "reasoning_effort"),
        ] {
            assert_eq!(variables(extra).expect_err(extra).param, param);
        }
    }

    #[test]
    fn tools_and_the_choice_are_checked() {
        let tool =
            r#"{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}"#;
        let tools = |extra: &str| {
            let json = format!(
                r#"{{"messages": [{{"role": "user", "content": "hi"}}], "tools": [{tool}]{extra}}}"#
            );
            serde_json::from_str::<ChatRequest>(&json).unwrap().tools()
        };
        let offered = tools("").unwrap().expect("tools offered");
        assert_eq!(offered.choice, ToolChoice::Auto);
        assert_eq!(offered.tools[0]["function"]["name"], "f");
        let named = r#", "tool_choice": {"type": "function", "function": {"name": "f"}}"#;
        assert_eq!(
            tools(named).unwrap().unwrap().choice,
            ToolChoice::Named("f".into())
        );
        for (extra, param) in [
            (
                r#", "tool_choice": {"type": "function", "function": {"name": "g"}}"#,
                "tool_choice",
            ),
            (r#", "tool_choice": "sometimes""#, "tool_choice"),
            (
                r#", "response_format": {"type": "json_object"}"#,
                "response_format",
            ),
        ] {
            assert_eq!(tools(extra).expect_err("refused").param, param, "{extra}");
        }
    }

    #[test]
    fn image_parts_stand_as_markers_and_their_bytes_come_out() {
        let body = r#"{"messages": [{"role": "user", "content": [
            {"type": "text", "text": "a "},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}},
            {"type": "text", "text": " b"}]}]}"#;
        let r: ChatRequest = serde_json::from_str(body).unwrap();
        let marker = crate::vision::IMAGE_MARKER;
        assert_eq!(
            r.conversation().unwrap()[0].content,
            format!("a {marker} b")
        );
        assert_eq!(r.images().unwrap(), vec![b"hello".to_vec()]);
        for (url, says) in [
            ("https://example.org/cat.png", "https: URLs are not fetched"),
            ("data:image/png,raw", "must be base64"),
            ("data:image/png;base64,@@@", "does not decode"),
        ] {
            let body = body.replace("data:image/png;base64,aGVsbG8=", url);
            let r: ChatRequest = serde_json::from_str(&body).unwrap();
            let err = r.images().unwrap_err();
            assert!(
                err.message.contains(says) && err.param == "messages",
                "{url}: {err}"
            );
        }
    }
}

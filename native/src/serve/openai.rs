//! OpenAI's request and response shapes, as clients send and expect them. Unknown fields are ignored
//! (clients send extras); a known field with the wrong type is a 400.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    #[serde(flatten)]
    pub sampling: Sampling,
}

#[derive(Deserialize)]
pub struct CompletionRequest {
    pub prompt: Prompt,
    #[serde(flatten)]
    pub sampling: Sampling,
}

/// What chat and text completions share.
#[derive(Deserialize)]
pub struct Sampling {
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_tokens: Option<u32>,
    pub max_completion_tokens: Option<u32>,
    pub seed: Option<u64>,
    pub stop: Option<Stop>,
    pub n: Option<u32>,
    #[serde(default)]
    pub stream: bool,
    pub stream_options: Option<StreamOptions>,
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
}

/// A message's content: a string, or parts of which the text ones count.
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
}

impl Content {
    pub fn text(&self) -> Result<String, ApiError> {
        match self {
            Content::Text(t) => Ok(t.clone()),
            Content::Parts(parts) => parts
                .iter()
                .map(|p| match (p.kind.as_str(), &p.text) {
                    ("text", Some(t)) => Ok(t.as_str()),
                    _ => Err(ApiError::invalid(
                        format!("content parts of type {:?} are not supported", p.kind),
                        "messages",
                    )),
                })
                .collect(),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
pub enum Prompt {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(untagged)]
pub enum Stop {
    One(String),
    Many(Vec<String>),
}

impl Stop {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Stop::One(s) => vec![s],
            Stop::Many(v) => v,
        }
    }
}

#[derive(Serialize, Clone, Copy)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
}

/// An error in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}` with its HTTP status.
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    pub kind: &'static str,
    pub param: Option<&'static str>,
    pub code: Option<&'static str>,
}

impl ApiError {
    pub fn invalid(message: impl Into<String>, param: &'static str) -> ApiError {
        ApiError {
            status: 400,
            message: message.into(),
            kind: "invalid_request_error",
            param: Some(param),
            code: None,
        }
    }

    pub fn body(&self) -> Value {
        json!({ "error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }
}

//! OpenAI's error shape. The request shapes and their checks are the library's (`wick::openai`), shared
//! with the browser package.

use serde_json::{json, Value};
use wick::openai::InvalidRequest;

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

impl From<InvalidRequest> for ApiError {
    fn from(e: InvalidRequest) -> ApiError {
        ApiError::invalid(e.message, e.param)
    }
}

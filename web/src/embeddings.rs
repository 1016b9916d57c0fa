//! `Model.embed`: OpenAI's embeddings request in, its answer out, as `wick serve` answers
//! /v1/embeddings (the same parsing, checks and shapes: `wick::openai::embeddings`).

use super::{bad_request, js_error, lost_or, Model};
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use wick::openai::embeddings::{respond, EmbedError, EmbeddingRequest};

#[wasm_bindgen]
impl Model {
    /// Takes an OpenAI embeddings request body (JSON) and resolves to OpenAI's answer (JSON text):
    /// `{ object: 'list', data: [{ object: 'embedding', index, embedding }], model, usage }`. A bad
    /// request, or one to a model that makes no embeddings, rejects with a BadRequestError.
    pub fn embed(&self, body: String, model: String) -> Promise {
        let session = self.session.clone();
        future_to_promise(async move {
            let request: EmbeddingRequest = serde_json::from_str(&body)
                .map_err(|e| bad_request(format!("the request is not valid: {e}")))?;
            let mut session = session
                .try_borrow_mut()
                .map_err(|_| js_error("the model is busy with another request"))?;
            match respond(&mut session, &request, &model).await {
                Ok(answer) => Ok(JsValue::from_str(&answer.to_string())),
                Err(EmbedError::Invalid(e)) => Err(bad_request(e)),
                Err(EmbedError::Engine(e)) => Err(js_error(lost_or(&session.engine.gpu, e).await)),
            }
        })
    }
}

//! The HTTP side: parsing and checking requests, handing jobs to the engine thread, and answering as
//! OpenAI does, in one JSON body or as server-sent events ending in `data: [DONE]`.

use super::metrics::Metrics;
use super::openai::ApiError;
use super::worker::{Event, Input, Job, Task, QUEUE_DEPTH};
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Request, State as Shared};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use wick::openai::embeddings::EmbeddingRequest;
use wick::openai::{ChatRequest, CompletionRequest, Sampling, Settings, Usage};
use wick::tools::Call;

pub struct State {
    tasks: mpsc::Sender<Task>,
    metrics: Arc<Metrics>,
    model: String,
    api_key: Option<String>,
    next_id: AtomicU64,
    started: u64,
}

impl State {
    pub fn new(
        tasks: mpsc::Sender<Task>,
        metrics: Arc<Metrics>,
        model: String,
        api_key: Option<String>,
    ) -> Arc<State> {
        Arc::new(State {
            tasks,
            metrics,
            model,
            api_key,
            next_id: AtomicU64::new(1),
            started: unix_time(),
        })
    }
}

pub fn router(state: Arc<State>, cors: bool, max_body: usize) -> Router {
    let app = Router::new()
        .route(
            "/health",
            get(|| async { json_response(200, json!({ "status": "ok" })) }),
        )
        .route("/v1/models", get(models))
        .route("/metrics", get(metrics))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/embeddings", post(embeddings))
        .fallback(|| async { error_response(not_found()) })
        .method_not_allowed_fallback(|| async {
            error_response(ApiError {
                status: 405,
                ..ApiError::invalid("this method is not allowed here", "method")
            })
        })
        .layer(middleware::from_fn_with_state(state.clone(), require_key))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state);
    if cors {
        app.layer(middleware::from_fn(allow_cors))
    } else {
        app
    }
}

async fn models(Shared(state): Shared<Arc<State>>) -> Response {
    json_response(
        200,
        json!({ "object": "list", "data": [{
            "id": state.model, "object": "model", "created": state.started, "owned_by": "wick",
        }]}),
    )
}

async fn metrics(Shared(state): Shared<Arc<State>>) -> Response {
    let queued = state.tasks.max_capacity() - state.tasks.capacity();
    Response::builder()
        .header(header::CONTENT_TYPE, "text/plain; version=0.0.4")
        .body(Body::from(state.metrics.render(queued)))
        .expect("a valid response")
}

/// Chat and text completions differ only in their input and in the shape of their answers.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Chat,
    Text,
}

async fn chat(Shared(state): Shared<Arc<State>>, body: Result<Bytes, BytesRejection>) -> Response {
    let request = parse::<ChatRequest>(body).and_then(|r| {
        let (messages, variables) = (r.conversation()?, r.template_variables()?);
        let input = Input::Chat(messages, r.tools()?, variables, r.images()?);
        Ok((input, r.sampling))
    });
    respond(state, Kind::Chat, request).await
}

async fn completions(
    Shared(state): Shared<Arc<State>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let request =
        parse::<CompletionRequest>(body).and_then(|r| Ok((Input::Text(r.prompt()?), r.sampling)));
    respond(state, Kind::Text, request).await
}

/// Embeddings are answered whole: the engine thread runs every input of the request in turn.
async fn embeddings(
    Shared(state): Shared<Arc<State>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let answered = async {
        let request = parse::<EmbeddingRequest>(body)?;
        let (answer, rx) = oneshot::channel();
        let model = state.model.clone();
        queue(
            &state,
            Task::Embed {
                request,
                model,
                answer,
            },
        )?;
        rx.await.map_err(|_| engine_stopped())?
    };
    match answered.await {
        Ok(body) => json_response(200, body),
        Err(e) => error_response(e),
    }
}

/// Hands a task to the engine thread, or says why it cannot take one now.
fn queue(state: &State, task: Task) -> Result<(), ApiError> {
    state.tasks.try_send(task).map_err(|e| ApiError {
        status: 503,
        message: match e {
            mpsc::error::TrySendError::Full(_) => {
                format!("the server is busy: {QUEUE_DEPTH} requests are already waiting")
            }
            mpsc::error::TrySendError::Closed(_) => "the engine has stopped".into(),
        },
        kind: "server_error",
        param: None,
        code: None,
    })
}

async fn respond(
    state: Arc<State>,
    kind: Kind,
    request: Result<(Input, Sampling), ApiError>,
) -> Response {
    match run(state, kind, request).await {
        Ok(response) => response,
        Err(e) => error_response(e),
    }
}

/// Queues the job and waits until the engine has accepted its prompt, so a bad prompt is still an HTTP
/// error; then answers whole or streams.
async fn run(
    state: Arc<State>,
    kind: Kind,
    request: Result<(Input, Sampling), ApiError>,
) -> Result<Response, ApiError> {
    let (input, sampling) = request?;
    let settings = Settings::from(sampling, clock_seed())?;
    let (events, mut rx) = mpsc::unbounded_channel();
    let job = Job {
        input,
        max_tokens: settings.max_tokens,
        stop: settings.stop,
        sampler: settings.sampler,
        grammar: settings.grammar,
        log_probs: settings.log_probs,
        prediction: settings.prediction,
        events,
    };
    queue(&state, Task::Generate(Box::new(job)))?;
    match rx.recv().await {
        Some(Event::Started) => {}
        Some(Event::Failed(e)) => return Err(e),
        _ => return Err(engine_stopped()),
    }
    let meta = Arc::new(Meta {
        kind,
        id: format!(
            "{}-{}",
            match kind {
                Kind::Chat => "chatcmpl",
                Kind::Text => "cmpl",
            },
            state.next_id.fetch_add(1, Ordering::Relaxed)
        ),
        created: unix_time(),
        model: state.model.clone(),
    });
    if settings.stream {
        return Ok(stream(meta, rx, settings.include_usage));
    }
    let (mut text, mut reasoning) = (String::new(), String::new());
    loop {
        match rx.recv().await {
            Some(Event::Text {
                text: t,
                reasoning: r,
                ..
            }) => {
                text += &t;
                reasoning += &r;
            }
            Some(Event::Done {
                finish,
                usage,
                calls,
                log_probs,
            }) => {
                let said = Said {
                    text: &text,
                    reasoning: &reasoning,
                    calls: &calls,
                };
                let whole = meta.whole(said, finish, usage, log_probs);
                return Ok(json_response(200, whole));
            }
            Some(Event::Failed(e)) => return Err(e),
            Some(Event::Started) | None => return Err(engine_stopped()),
        }
    }
}

/// Server-sent events: a chunk per piece of text (with its tokens' log-probabilities, where asked
/// for), a last chunk with the finish reason (and the reply's log-probabilities where no piece
/// carried them: a reply read as tool calls), the usage chunk if asked for, then `[DONE]`. Dropping
/// the stream (the client left) drops `rx`, which stops the job.
fn stream(meta: Arc<Meta>, rx: mpsc::UnboundedReceiver<Event>, include_usage: bool) -> Response {
    let first = match meta.kind {
        Kind::Chat => Some(sse(
            &meta.chunk(json!({ "role": "assistant", "content": "" }), None)
        )),
        Kind::Text => None,
    };
    // The receiver, and whether a piece carried log-probabilities.
    let rest = futures_util::stream::unfold(Some((rx, false)), move |state| {
        let meta = meta.clone();
        async move {
            let (mut rx, pieces_had_log_probs) = state?;
            let (bytes, state) = match rx.recv().await {
                Some(Event::Text {
                    text,
                    reasoning,
                    log_probs,
                }) => {
                    let mut chunk = meta.chunk(meta.delta(&text, &reasoning), None);
                    let carried = log_probs.is_some();
                    chunk["choices"][0]["logprobs"] = log_probs.unwrap_or(Value::Null);
                    (sse(&chunk), Some((rx, pieces_had_log_probs || carried)))
                }
                Some(Event::Done {
                    finish,
                    usage,
                    calls,
                    log_probs,
                }) => {
                    let mut out = String::new();
                    if !calls.is_empty() {
                        let delta = json!({ "tool_calls": meta.tool_calls(&calls, true) });
                        out += &sse(&meta.chunk(delta, None));
                    }
                    let mut last = meta.chunk(meta.delta("", ""), Some(finish));
                    if !pieces_had_log_probs {
                        last["choices"][0]["logprobs"] = log_probs.unwrap_or(Value::Null);
                    }
                    out += &sse(&last);
                    if include_usage {
                        out += &sse(&meta.usage_chunk(usage));
                    }
                    (out + "data: [DONE]\n\n", None)
                }
                Some(Event::Failed(e)) => (sse(&e.body()) + "data: [DONE]\n\n", None),
                Some(Event::Started) | None => (sse(&engine_stopped().body()), None),
            };
            Some((Ok::<_, std::convert::Infallible>(Bytes::from(bytes)), state))
        }
    });
    let body = futures_util::stream::iter(first.map(|b| Ok(Bytes::from(b)))).chain(rest);
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .expect("a valid response")
}

fn sse(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// What a finished reply said: its answer, its reasoning, its calls.
struct Said<'a> {
    text: &'a str,
    reasoning: &'a str,
    calls: &'a [Call],
}

/// What every answer to one request carries.
struct Meta {
    kind: Kind,
    id: String,
    created: u64,
    model: String,
}

impl Meta {
    fn object(&self, chunk: bool) -> &'static str {
        match (self.kind, chunk) {
            (Kind::Chat, false) => "chat.completion",
            (Kind::Chat, true) => "chat.completion.chunk",
            (Kind::Text, _) => "text_completion",
        }
    }

    fn envelope(&self, chunk: bool, choices: Value) -> Value {
        json!({
            "id": self.id, "object": self.object(chunk), "created": self.created, "model": self.model,
            "choices": choices,
        })
    }

    fn whole(&self, said: Said, finish: &str, usage: Usage, log_probs: Option<Value>) -> Value {
        let Said {
            text,
            reasoning,
            calls,
        } = said;
        let mut choice = match self.kind {
            Kind::Chat if !calls.is_empty() => json!({
                "index": 0, "logprobs": null, "finish_reason": finish,
                "message": { "role": "assistant", "content": (!text.is_empty()).then_some(text),
                    "tool_calls": self.tool_calls(calls, false) },
            }),
            Kind::Chat => json!({
                "index": 0, "message": { "role": "assistant", "content": text },
                "logprobs": null, "finish_reason": finish,
            }),
            Kind::Text => {
                json!({ "index": 0, "text": text, "logprobs": null, "finish_reason": finish })
            }
        };
        if !reasoning.is_empty() {
            choice["message"]["reasoning_content"] = json!(reasoning);
        }
        let mut v = self.envelope(false, json!([choice]));
        v["choices"][0]["logprobs"] = log_probs.unwrap_or(Value::Null);
        v["usage"] = json!(usage);
        v
    }

    /// The calls as OpenAI lists them, each with an id of this answer's; a chunk's carry their index.
    fn tool_calls(&self, calls: &[Call], chunk: bool) -> Value {
        let listed = calls.iter().enumerate().map(|(i, c)| {
            let mut call = json!({ "id": format!("call_{}_{i}", self.id), "type": "function",
                "function": { "name": c.name, "arguments": c.arguments } });
            if chunk {
                call["index"] = json!(i);
            }
            call
        });
        Value::Array(listed.collect())
    }

    /// The part of a chunk that carries new text: a chat's answer and reasoning, each where there
    /// is some (a text completion's reasoning is never read apart).
    fn delta(&self, text: &str, reasoning: &str) -> Value {
        if self.kind == Kind::Text {
            return json!(text);
        }
        let mut delta = json!({});
        if !text.is_empty() {
            delta["content"] = json!(text);
        }
        if !reasoning.is_empty() {
            delta["reasoning_content"] = json!(reasoning);
        }
        delta
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        let field = match self.kind {
            Kind::Chat => "delta",
            Kind::Text => "text",
        };
        let mut choice = json!({ "index": 0, "logprobs": null, "finish_reason": finish });
        choice[field] = delta;
        self.envelope(true, json!([choice]))
    }

    fn usage_chunk(&self, usage: Usage) -> Value {
        let mut v = self.envelope(true, json!([]));
        v["usage"] = json!(usage);
        v
    }
}

fn parse<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let bytes = body.map_err(|r| ApiError {
        status: r.status().as_u16(),
        message: r.body_text(),
        kind: "invalid_request_error",
        param: None,
        code: None,
    })?;
    serde_json::from_slice(&bytes).map_err(|e| ApiError {
        status: 400,
        message: format!("the request body is not valid: {e}"),
        kind: "invalid_request_error",
        param: None,
        code: None,
    })
}

/// With --api-key, every route but /health wants `Authorization: Bearer KEY`.
async fn require_key(Shared(state): Shared<Arc<State>>, request: Request, next: Next) -> Response {
    if let Some(key) = &state.api_key {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if request.uri().path() != "/health" && !given.is_some_and(|g| same_secret(g, key)) {
            return error_response(ApiError {
                status: 401,
                message: "a valid API key is required (Authorization: Bearer KEY)".into(),
                kind: "invalid_request_error",
                param: None,
                code: Some("invalid_api_key"),
            });
        }
    }
    next.run(request).await
}

/// Compares without stopping at the first difference, so timing does not tell how much of a key was right.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// --cors: any origin may call; preflights are answered here, before the key is checked.
async fn allow_cors(request: Request, next: Next) -> Response {
    let mut response = if request.method() == Method::OPTIONS {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(request).await
    };
    let h = response.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    response
}

fn json_response(status: u16, body: Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn error_response(e: ApiError) -> Response {
    json_response(e.status, e.body())
}

fn not_found() -> ApiError {
    ApiError {
        status: 404,
        message: "no such route".into(),
        kind: "invalid_request_error",
        param: None,
        code: Some("not_found"),
    }
}

fn engine_stopped() -> ApiError {
    ApiError {
        status: 500,
        message: "the engine stopped".into(),
        kind: "server_error",
        param: None,
        code: None,
    }
}

fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

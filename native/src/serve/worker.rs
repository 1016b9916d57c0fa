//! The one engine behind the server: a thread that owns the session and takes jobs in arrival order, so
//! concurrent requests queue fairly and never interleave. A job's events go back on its own channel; when
//! the client has gone (the receiver is dropped) the generation stops at the next token.

use super::metrics::{Generated, Metrics};
use super::openai::ApiError;
use pollster::FutureExt as _;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use wick::chat_template::ChatMessage;
use wick::grammar::Grammar;
use wick::openai::embeddings::{self, EmbedError, EmbeddingRequest};
use wick::openai::{self, Answer, Usage};
use wick::sampler::SamplerConfig;
use wick::session::Session;
use wick::tools::{Call, Offered, ToolUse};

/// Requests waiting for the engine beyond the one it runs; more are refused with 503.
pub const QUEUE_DEPTH: usize = 64;

pub enum Input {
    Chat(Vec<ChatMessage>, Option<Offered>),
    Text(String),
}

/// What the engine thread is asked to do.
pub enum Task {
    Generate(Job),
    /// Embeddings, answered whole in OpenAI's shape.
    Embed {
        request: EmbeddingRequest,
        model: String,
        answer: oneshot::Sender<Result<Value, ApiError>>,
    },
}

pub struct Job {
    pub input: Input,
    /// At most this many tokens; None: until the context is full.
    pub max_tokens: Option<usize>,
    pub stop: Vec<String>,
    pub sampler: SamplerConfig,
    /// What the reply must match (a JSON schema, any JSON object), if anything.
    pub grammar: Option<Grammar>,
    /// Report each token's log-probability and this many alternatives.
    pub log_probs: Option<usize>,
    pub events: mpsc::Sender<Event>,
}

pub enum Event {
    /// The prompt was accepted and generation begins.
    Started,
    Text(String),
    Done {
        finish: &'static str,
        usage: Usage,
        /// The calls the reply made (its text, if any, came as Text before).
        calls: Vec<Call>,
        /// The reply's tokens' log-probabilities in OpenAI's shape for the request, where asked for.
        log_probs: Option<Value>,
    },
    Failed(ApiError),
}

/// Starts the engine thread and returns the queue that feeds it; the thread counts what it does
/// in `metrics`.
pub fn start(mut session: Session, metrics: Arc<Metrics>) -> mpsc::Sender<Task> {
    let (tasks, mut queue) = mpsc::channel::<Task>(QUEUE_DEPTH);
    std::thread::Builder::new()
        .name("wick-engine".into())
        .spawn(move || {
            while let Some(task) = queue.blocking_recv() {
                let job = match task {
                    Task::Generate(job) => job,
                    Task::Embed {
                        request,
                        model,
                        answer,
                    } => {
                        if !answer.is_closed() {
                            metrics.start_task();
                            let _ = answer.send(embed(&mut session, &request, &model));
                            metrics.end_task();
                        }
                        continue;
                    }
                };
                // A client that left while queued costs nothing.
                if job.events.is_closed() {
                    continue;
                }
                metrics.start_task();
                let events = job.events.clone();
                let last = match run(&mut session, job, &metrics) {
                    Ok(done) => done,
                    Err(e) => Event::Failed(e),
                };
                metrics.end_task();
                let _ = events.blocking_send(last);
            }
        })
        .expect("the engine thread starts");
    tasks
}

fn embed(
    session: &mut Session,
    request: &EmbeddingRequest,
    model: &str,
) -> Result<Value, ApiError> {
    embeddings::respond(session, request, model)
        .block_on()
        .map_err(|e| match e {
            EmbedError::Invalid(e) => e.into(),
            EmbedError::Engine(e) => ApiError {
                status: 500,
                message: format!("embedding failed: {e}"),
                kind: "server_error",
                param: None,
                code: None,
            },
        })
}

fn run(session: &mut Session, job: Job, metrics: &Metrics) -> Result<Event, ApiError> {
    embeddings::refuse_completion(session)?;
    let template_failed = |e: wick::Error| ApiError {
        status: 400,
        message: format!("the chat template failed: {e}"),
        kind: "invalid_request_error",
        param: Some("messages"),
        code: None,
    };
    let mut tool_use = None;
    let prompt_text = match &job.input {
        Input::Chat(messages, offered) => {
            let template = session.chat_template().map_err(template_failed)?;
            let tools = offered.clone().map(|o| ToolUse::new(template, o));
            let text = match &tools {
                Some(t) => session.chat_prompt(&t.messages(messages), t.template_tools()),
                None => session.chat_prompt(messages, &[]),
            };
            tool_use = tools;
            text.map_err(template_failed)?
        }
        Input::Text(text) => text.clone(),
    };
    let prompt = session.tokenize_prompt(&prompt_text);
    let n_ctx = session.engine.n_ctx() as usize;
    if prompt.is_empty() {
        return Err(ApiError::invalid("the prompt is empty", "prompt"));
    }
    if prompt.len() >= n_ctx {
        return Err(ApiError {
            code: Some("context_length_exceeded"),
            ..ApiError::invalid(
                format!(
                    "the prompt is {} tokens; this server's context is {n_ctx} tokens",
                    prompt.len()
                ),
                "messages",
            )
        });
    }
    let mut sampler = openai::sampler(
        session,
        job.sampler,
        tool_use.as_ref(),
        job.grammar.as_ref(),
        job.log_probs,
    )?;
    if job.events.blocking_send(Event::Started).is_err() {
        return Err(ApiError::invalid("the client left", "messages"));
    }
    let max_tokens = job.max_tokens.unwrap_or(n_ctx);
    let events = &job.events;
    // With tools the text is read as calls once it is whole, so it is sent then, not as it comes.
    let streamed = tool_use.is_none();
    let completion = session
        .complete(&prompt, max_tokens, &job.stop, &mut sampler, &mut |text| {
            !streamed || events.blocking_send(Event::Text(text.to_string())).is_ok()
        })
        .block_on()
        .map_err(|e| ApiError {
            status: 500,
            message: format!("generation failed: {e}"),
            kind: "server_error",
            param: None,
            code: None,
        })?;
    let answer = Answer::of(&completion.text, completion.finish, tool_use.as_ref());
    if !streamed && !answer.content.is_empty() {
        let _ = events.blocking_send(Event::Text(answer.content));
    }
    let usage = Usage::of(&completion);
    metrics.add(Generated {
        prompt_tokens: usage.prompt_tokens,
        cached_tokens: usage.prompt_tokens_details.cached_tokens,
        prompt_time: completion.prompt_time,
        tokens: usage.completion_tokens,
        time: completion.gen_time,
    });
    let log_probs = job.log_probs.map(|_| {
        let probs = &completion.log_probs;
        match job.input {
            Input::Chat(..) => openai::log_probs::chat(&session.tokenizer, probs),
            Input::Text(_) => openai::log_probs::text(&session.tokenizer, probs, 0),
        }
    });
    Ok(Event::Done {
        finish: answer.finish_reason,
        usage,
        calls: answer.calls,
        log_probs,
    })
}

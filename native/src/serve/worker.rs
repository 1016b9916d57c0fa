//! The one engine behind the server: a thread that owns the session and takes jobs in arrival order, so
//! concurrent requests queue fairly and never interleave. A job's events go back on its own channel; when
//! the client has gone (the receiver is dropped) the generation stops at the next token.

use super::metrics::{Generated, Metrics};
use super::openai::ApiError;
use pollster::FutureExt as _;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use wick::chat_template::{ChatMessage, Extras, Variables};
use wick::grammar::Grammar;
use wick::openai::embeddings::{self, EmbedError, EmbeddingRequest};
use wick::openai::{self, Answer, Usage};
use wick::reply::Completion;
use wick::reply::{Piece, Reply};
use wick::sampler::{Sampler, SamplerConfig};
use wick::session::Session;
use wick::tools::{Call, Offered, ToolUse};

/// Requests waiting for the engine beyond the one it runs; more are refused with 503.
pub const QUEUE_DEPTH: usize = 64;

pub enum Input {
    /// A conversation, the tools offered, the chat template's variables, and the bytes of the
    /// images its content parts carry (each at an image marker in its message's text).
    Chat(Vec<ChatMessage>, Option<Offered>, Variables, Vec<Vec<u8>>),
    Text(String),
}

/// What the engine thread is asked to do.
pub enum Task {
    /// A reply; boxed, so that a task is small whichever kind it is.
    Generate(Box<Job>),
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
    /// What the reply is expected to say: drafted from first where the server speculates.
    pub prediction: Option<String>,
    /// Where the reply goes. Unbounded, so that a client slow to read never holds up the engine
    /// thread (and with it every other request): what waits is one reply's pieces at most.
    pub events: mpsc::UnboundedSender<Event>,
}

pub enum Event {
    /// The prompt was accepted and generation begins.
    Started,
    /// A piece of the reply's text (its answer, and its reasoning where the model's is read apart),
    /// with its tokens' log-probabilities in OpenAI's shape for the request where it asks for them.
    Text {
        text: String,
        reasoning: String,
        log_probs: Option<Value>,
    },
    Done {
        finish: &'static str,
        usage: Usage,
        /// The calls the reply made (its text, if any, came as Text before).
        calls: Vec<Call>,
        /// All the reply's tokens' log-probabilities in OpenAI's shape for the request, where asked
        /// for (a streamed reply sent them with its pieces too).
        log_probs: Option<Value>,
    },
    Failed(ApiError),
}

/// Serves the queue's tasks one at a time, in arrival order, until it closes.
pub fn serve_in_turn(mut session: Session, mut queue: mpsc::Receiver<Task>, metrics: &Metrics) {
    while let Some(task) = queue.blocking_recv() {
        let job = match task {
            Task::Generate(job) => *job,
            Task::Embed {
                request,
                model,
                answer,
            } => {
                answer_embeddings(&mut session, &request, &model, answer, metrics);
                continue;
            }
        };
        // A client that left while queued costs nothing.
        if job.events.is_closed() {
            continue;
        }
        metrics.start_task();
        let events = job.events.clone();
        let last = match run(&mut session, job, metrics) {
            Ok(done) => done,
            Err(e) => Event::Failed(e),
        };
        metrics.end_task();
        let _ = events.send(last);
    }
}

/// Answers an embeddings request, where its client still waits.
pub fn answer_embeddings(
    session: &mut Session,
    request: &EmbeddingRequest,
    model: &str,
    answer: oneshot::Sender<Result<Value, ApiError>>,
    metrics: &Metrics,
) {
    if !answer.is_closed() {
        metrics.start_task();
        let _ = answer.send(embed(session, request, model));
        metrics.end_task();
    }
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

/// A request made ready for the engine: its prompt's tokens, its sampler, its reply (the budget,
/// the stop strings, the reasoning read apart for a chat).
pub struct Prepared {
    pub prompt: Vec<u32>,
    pub sampler: Sampler,
    pub reply: Reply,
    /// The tools offered, where the reply is to be read as calls: its text is sent when whole.
    pub tool_use: Option<ToolUse>,
    pub pieces: Pieces,
}

/// Sends a reply's text to its client as it comes, each piece with its tokens' log-probabilities
/// where the request asks for them. With tools nothing goes out as it comes: the reply is read as
/// calls once whole.
pub struct Pieces {
    streamed: bool,
    chat: bool,
    /// Where a text completion's next token starts, in characters.
    text_offset: usize,
}

impl Pieces {
    /// Sends `piece`; false when the client has gone.
    pub fn send(&mut self, events: &mpsc::UnboundedSender<Event>, piece: Piece) -> bool {
        if !self.streamed {
            return true;
        }
        let (tokenizer, probs) = (piece.tokenizer, piece.log_probs);
        let log_probs = (!probs.is_empty()).then(|| match self.chat {
            true => openai::log_probs::chat(tokenizer, probs),
            false => openai::log_probs::text(tokenizer, probs, &mut self.text_offset),
        });
        let (text, reasoning) = (piece.text.to_string(), piece.reasoning.to_string());
        let event = Event::Text {
            text,
            reasoning,
            log_probs,
        };
        events.send(event).is_ok()
    }
}

/// Renders and tokenizes `job`'s prompt and makes its sampler, refusing what cannot run: a prompt
/// that leaves no room in a context of `n_ctx` positions, a grammar that does not parse. Tells the
/// client generation begins.
pub fn prepare(session: &mut Session, job: &Job, n_ctx: usize) -> Result<Prepared, ApiError> {
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
        Input::Chat(messages, offered, variables, _) => {
            let template = session.chat_template().map_err(template_failed)?;
            let tools = offered.clone().map(|o| ToolUse::new(template, o));
            let extras = Extras {
                tools: tools
                    .as_ref()
                    .map_or(Vec::new(), |t| t.template_tools().to_vec()),
                variables: variables.clone(),
            };
            let text = match &tools {
                Some(t) => session.chat_prompt(&t.messages(messages), &extras),
                None => session.chat_prompt(messages, &extras),
            };
            tool_use = tools;
            text.map_err(template_failed)?
        }
        Input::Text(text) => text.clone(),
    };
    let prompt = match &job.input {
        Input::Chat(.., images) if !images.is_empty() => {
            image_prompt(session, &prompt_text, images)?
        }
        _ => session.tokenize_prompt(&prompt_text),
    };
    let prompt_field = match job.input {
        Input::Chat(..) => "messages",
        Input::Text(_) => "prompt",
    };
    if prompt.is_empty() {
        return Err(ApiError::invalid("the prompt is empty", prompt_field));
    }
    if prompt.len() >= n_ctx {
        return Err(ApiError {
            code: Some("context_length_exceeded"),
            ..ApiError::invalid(
                format!(
                    "the prompt is {} tokens; this server's context is {n_ctx} tokens",
                    prompt.len()
                ),
                prompt_field,
            )
        });
    }
    let sampler = openai::sampler(
        session,
        job.sampler.clone(),
        tool_use.as_ref(),
        job.grammar.as_ref(),
        job.log_probs,
    )?;
    if job.events.send(Event::Started).is_err() {
        return Err(ApiError::invalid("the client left", "messages"));
    }
    let pieces = Pieces {
        streamed: tool_use.is_none(),
        chat: matches!(job.input, Input::Chat(..)),
        text_offset: 0,
    };
    let max_tokens = job.max_tokens.unwrap_or(n_ctx);
    let reply = match job.input {
        Input::Chat(..) => session.chat_reply(&prompt_text, max_tokens, &job.stop),
        Input::Text(_) => Reply::new(max_tokens, &job.stop),
    };
    Ok(Prepared {
        prompt,
        sampler,
        reply,
        tool_use,
        pieces,
    })
}

/// The prompt with the request's images decoded, encoded and placed at their markers; what the
/// images get wrong, or a server without a projector, is the client's 400.
fn image_prompt(
    session: &mut Session,
    text: &str,
    images: &[Vec<u8>],
) -> Result<Vec<u32>, ApiError> {
    if !session.takes_images() {
        return Err(ApiError::invalid(
            "this server reads no images: it was started without a vision projector (--mmproj)",
            "messages",
        ));
    }
    let decoded = images
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            crate::vision::decode_image(bytes).map_err(|e| {
                ApiError::invalid(
                    format!("image {} cannot be decoded: {e:#}", i + 1),
                    "messages",
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    session
        .tokenize_prompt_with_images(text, &decoded)
        .block_on()
        .map_err(|e| match e {
            wick::Error::Model(why) => ApiError::invalid(why, "messages"),
            e => generation_failed(e),
        })
}

/// Runs a prepared job to the end, its text sent as it comes.
fn run(session: &mut Session, job: Job, metrics: &Metrics) -> Result<Event, ApiError> {
    let n_ctx = session.engine.n_ctx() as usize;
    let Prepared {
        prompt,
        mut sampler,
        reply,
        tool_use,
        mut pieces,
    } = prepare(session, &job, n_ctx)?;
    if let Some(text) = &job.prediction {
        session.predict(text);
    }
    let events = &job.events;
    let drafts = |s: &Session| s.speculation.as_ref().map(|s| s.stats).unwrap_or_default();
    let before = drafts(session);
    let completion = session
        .complete(&prompt, reply, &mut sampler, &mut |piece| {
            pieces.send(events, piece)
        })
        .block_on()
        .map_err(generation_failed)?;
    let after = drafts(session);
    metrics.add_drafts(
        after.checks - before.checks,
        after.proposed - before.proposed,
        after.accepted - before.accepted,
    );
    Ok(done(session, &job, tool_use.as_ref(), &completion, metrics))
}

pub fn generation_failed(e: impl std::fmt::Display) -> ApiError {
    ApiError {
        status: 500,
        message: format!("generation failed: {e}"),
        kind: "server_error",
        param: None,
        code: None,
    }
}

/// The last event of a finished reply (its text, if held back for tools, sent first), counted in
/// `metrics`.
pub fn done(
    session: &Session,
    job: &Job,
    tool_use: Option<&ToolUse>,
    completion: &Completion,
    metrics: &Metrics,
) -> Event {
    let answer = Answer::of(completion, tool_use);
    let said = !answer.content.is_empty() || !completion.reasoning.is_empty();
    if tool_use.is_some() && said {
        let _ = job.events.send(Event::Text {
            text: answer.content,
            reasoning: completion.reasoning.clone(),
            log_probs: None,
        });
    }
    let usage = Usage::of(completion);
    metrics.set_steps_ahead(session.engine.stats.totals.ahead);
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
            Input::Text(_) => openai::log_probs::text(&session.tokenizer, probs, &mut 0),
        }
    });
    Event::Done {
        finish: answer.finish_reason,
        usage,
        calls: answer.calls,
        log_probs,
    }
}

//! Wick in the browser: the engine behind the npm package's worker. The worker hands in a reader (the
//! bytes come from `fetch` range requests, the Cache API or a `File`, all in JavaScript) and calls
//! `load`, then `Model.chat` per request; everything else is the engine the native CLI runs.

// A request holds the session's RefCell across its awaits on purpose: it is the lock that refuses a
// second request (`try_borrow_mut`) while one runs, and the tuner is reached only through it.
#![allow(clippy::await_holding_refcell_ref)]

use js_sys::{Function, Promise, Uint8Array};
use serde::Deserialize;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use wick::chat_template::Extras;
use wick::embeddings::Pooling;
use wick::engine::{LoadOptions, Profiled, TuneShapes, Tuner};
use wick::gguf::{read_end, ByteSource, ReadFuture, SourceError};
use wick::gpu::{Gpu, KvType, Tuning};
use wick::openai;
use wick::reply::Piece;
use wick::session::{Overflow, Session};
use wick::tools::ToolUse;
use wick::vision::{Projector, TokenBudget};

mod answers;
mod embeddings;
mod speculate;
mod vision;
use answers::{ChatResult, PredictionTokens, ProfileMs, Speculated, Stats, StepMs, TuneStep};

#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}

/// A GGUF file read through a JavaScript object `{ size, name, read(offset, length) -> Promise<Uint8Array> }`.
#[derive(Clone)]
struct JsSource {
    reader: JsValue,
    read: Function,
    size: u64,
    name: String,
}

impl JsSource {
    fn new(reader: JsValue) -> Result<JsSource, JsError> {
        let get = |key: &str| js_sys::Reflect::get(&reader, &JsValue::from_str(key));
        let size = get("size").ok().and_then(|v| v.as_f64());
        let read = get("read").ok().and_then(|v| v.dyn_into::<Function>().ok());
        let (Some(size), Some(read)) = (size, read) else {
            return Err(JsError::new("a reader needs size and read(offset, length)"));
        };
        let name = get("name").ok().and_then(|v| v.as_string());
        Ok(JsSource {
            reader,
            read,
            size: size as u64,
            name: name.unwrap_or_else(|| "model".into()),
        })
    }

    async fn fill(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        read_end(offset, buf.len(), self.size)?;
        let args = (
            JsValue::from_f64(offset as f64),
            JsValue::from_f64(buf.len() as f64),
        );
        let promise = self
            .read
            .call2(&self.reader, &args.0, &args.1)
            .map_err(|e| SourceError::Other(message_of(&e)))?;
        let bytes = JsFuture::from(Promise::from(promise))
            .await
            .map_err(|e| SourceError::Other(message_of(&e)))?;
        let bytes = Uint8Array::new(&bytes);
        if bytes.length() as usize != buf.len() {
            return Err(SourceError::Other(format!(
                "{}: asked for {} bytes at {offset}, got {}",
                self.name,
                buf.len(),
                bytes.length()
            )));
        }
        bytes.copy_to(buf);
        Ok(())
    }
}

impl ByteSource for JsSource {
    fn len(&self) -> u64 {
        self.size
    }

    fn read_at<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ReadFuture<'a> {
        Box::pin(self.fill(offset, buf))
    }

    fn describe(&self) -> String {
        self.name.clone()
    }

    /// The same reader: Gemma 4's per-layer rows are read through it after loading.
    fn reopen(&self) -> Option<wick::gguf::SharedSource> {
        Some(Box::new(self.clone()))
    }
}

/// The text of a thrown JavaScript value.
fn message_of(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

/// The browser tells a lost device by a promise that may settle after the failure it caused (a buffer
/// map that failed), later still where the GPU process is busy: give it moments of 50 ms, up to a
/// second, and where the device is gone, say that instead. (Only an error waits.)
async fn lost_or(gpu: &Gpu, e: wick::Error) -> String {
    for _ in 0..20 {
        if let Err(lost) = gpu.alive() {
            return lost.to_string();
        }
        let _ = JsFuture::from(moment(50.0)).await;
    }
    match gpu.alive() {
        Err(lost) => lost.to_string(),
        Ok(()) => e.to_string(),
    }
}

/// A promise that resolves after `ms` milliseconds (at once where the global scope has no timer).
fn moment(ms: f64) -> Promise {
    Promise::new(&mut |resolve, _| {
        let set_timeout = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("setTimeout"))
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok());
        match set_timeout {
            Some(f) => {
                let _ = f.call2(&JsValue::NULL, &resolve, &JsValue::from_f64(ms));
            }
            None => {
                let _ = resolve.call0(&JsValue::NULL);
            }
        }
    })
}

/// A request the engine will not run, named as OpenAI's client names a 400.
fn bad_request(e: impl std::fmt::Display) -> JsValue {
    let error = js_sys::Error::new(&e.to_string());
    error.set_name("BadRequestError");
    error.into()
}

fn js_error(e: impl std::fmt::Display) -> JsValue {
    JsError::new(&e.to_string()).into()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoadRequest {
    n_ctx: Option<u32>,
    /// When the conversation outgrows the context: drop the oldest turns and go on, instead of stopping.
    #[serde(default)]
    drop_old_turns: bool,
    /// Kernel shapes kept from earlier tuning: JSON of { adapter key: Tuning }, as `Model.tuneStep` gives.
    tuning: Option<String>,
    /// How embeddings pool ("mean", "cls", "last"); absent: as the file says (a chat model's says none).
    pooling: Option<String>,
    /// Tokens a speculative step checks at once (a draft's and the token before it); absent: none.
    check_tokens: Option<u32>,
    /// The fewest and the most tokens an image becomes (`TokenBudget`); absent: the projector's.
    image_min_tokens: Option<u32>,
    image_max_tokens: Option<u32>,
    /// "f16" or "f32": how the KV cache holds keys and values; absent: the adapter's.
    kv_cache: Option<String>,
    /// Whether the device was granted WebGPU's subgroups: the worker asks for them where the adapter
    /// has them, as wgpu's web backend does not.
    #[serde(default)]
    subgroups: bool,
}

/// Opens the GPU, reads the header and streams every tensor into GPU memory. `on_progress` receives
/// (bytes loaded, bytes in all). Where `projector` is a reader too (a vision projector, mmproj), it is
/// loaded after the model, its progress through `on_projector_progress`, and the model's prompt runs
/// are made long enough to hold an image.
#[wasm_bindgen]
pub async fn load(
    reader: JsValue,
    options: JsValue,
    on_progress: Function,
    projector: JsValue,
    on_projector_progress: JsValue,
) -> Result<Model, JsValue> {
    let options: LoadRequest = serde_wasm_bindgen::from_value(options)?;
    let source = JsSource::new(reader)?;
    let budget = TokenBudget {
        min_tokens: options.image_min_tokens,
        max_tokens: options.image_max_tokens,
    };
    let projector = match projector.is_undefined() || projector.is_null() {
        true => None,
        false => {
            let source = JsSource::new(projector)?;
            let (header, tokens) = vision::header(&source, budget).await?;
            Some((source, header, tokens))
        }
    };
    let gpu = Gpu::in_browser(options.subgroups).await.map_err(js_error)?;
    let adapter = gpu.describe();
    // Kept tuning for another adapter, or in a shape this version cannot read, is no tuning.
    let kept: Option<HashMap<String, Tuning>> = options
        .tuning
        .and_then(|json| serde_json::from_str(&json).ok());
    if let Some(tuning) = kept.and_then(|mut all| all.remove(&gpu.tuning_key())) {
        gpu.set_tuning(tuning);
    }
    // Unless told, the adapter's (`default_kv_cache`): f16 on GPUs, f32 on SwiftShader.
    let kv_cache = match options.kv_cache.as_deref() {
        None => None,
        Some("f32") => Some(KvType::F32),
        Some("f16") => Some(KvType::F16),
        Some(other) => {
            return Err(js_error(format!(
                "kvCache {other:?}: the KV cache is \"f32\" or \"f16\""
            )))
        }
    };
    let pooling = match options.pooling.as_deref() {
        None => None,
        Some(name) => Some(Pooling::from_name(name).ok_or_else(|| {
            js_error(format!(
                "pooling {name:?}: Wick pools by \"mean\", \"cls\" or \"last\""
            ))
        })?),
    };
    let load = LoadOptions {
        n_ctx: options.n_ctx.unwrap_or(LoadOptions::default().n_ctx),
        pooling,
        check_tokens: options.check_tokens.unwrap_or(0),
        kv_cache,
        // An image's tokens go in one prompt run.
        min_batch: (projector.as_ref()).map_or(0, |(.., tokens)| *tokens),
        ..Default::default()
    };
    let mut progress = |done: u64, total: u64| {
        let _ = on_progress.call2(
            &JsValue::NULL,
            &JsValue::from_f64(done as f64),
            &JsValue::from_f64(total as f64),
        );
    };
    let mut session = Session::load(gpu.clone(), &source, &load, &mut progress)
        .await
        .map_err(js_error)?;
    if let Some((source, header, _)) = projector {
        let on_progress: Function = on_projector_progress.dyn_into().unwrap_or(on_progress);
        let mut progress = |done: u64, total: u64| {
            let (done, total) = (
                JsValue::from_f64(done as f64),
                JsValue::from_f64(total as f64),
            );
            let _ = on_progress.call2(&JsValue::NULL, &done, &total);
        };
        let projector = Projector::load(gpu, (&header, &source), budget, &mut progress)
            .await
            .map_err(js_error)?;
        session.attach_projector(projector).map_err(js_error)?;
    }
    Ok(Model {
        session: Rc::new(RefCell::new(session)),
        overflow: if options.drop_old_turns {
            Overflow::DropOldestTurns
        } else {
            Overflow::Stop
        },
        adapter,
        last: Rc::new(RefCell::new(None)),
        tuner: Rc::new(RefCell::new(None)),
    })
}

/// A loaded model with its KV cache.
#[wasm_bindgen]
pub struct Model {
    session: Rc<RefCell<Session>>,
    overflow: Overflow,
    adapter: String,
    last: Rc<RefCell<Option<ChatResult>>>,
    /// The tuning under way, from the first `tune_step` on.
    tuner: Rc<RefCell<Option<Tuner>>>,
}

#[wasm_bindgen]
impl Model {
    /// Takes an OpenAI chat request body (JSON), renders the conversation with the model's chat
    /// template and generates the assistant's reply, reusing the cached turns.
    /// `on_text(piece, logprobs, reasoning)` receives the reply as it grows (with its tokens'
    /// log-probabilities as OpenAI's `logprobs` JSON, where asked for, and the reasoning it adds,
    /// where the model's template marks reasoning); returning false stops it. `images`: the pixels
    /// of the request's image parts in order, `[{ width, height, data: Uint8Array (RGBA) }]` (the
    /// worker decodes them). Resolves to { text, finishReason, promptTokens,
    /// completionTokens, ... }; a bad request rejects with a BadRequestError.
    pub fn chat(&self, body: String, on_text: Function, images: JsValue) -> Promise {
        let session = self.session.clone();
        let last = self.last.clone();
        let overflow = self.overflow;
        future_to_promise(async move {
            // The request as `wick serve` takes it: the same parsing and the same checks.
            let request: openai::ChatRequest = serde_json::from_str(&body)
                .map_err(|e| bad_request(format!("the request is not valid: {e}")))?;
            let messages = request.conversation().map_err(bad_request)?;
            let images = vision::images(images)?;
            let offered = request.tools().map_err(bad_request)?;
            let variables = request.template_variables().map_err(bad_request)?;
            let default_seed = (js_sys::Math::random() * 4294967296.0) as u64;
            let settings =
                openai::Settings::from(request.sampling, default_seed).map_err(bad_request)?;
            // A second request while one runs is refused: the worker queues them, so this is a bug.
            let mut session = session
                .try_borrow_mut()
                .map_err(|_| js_error("the model is busy with another request"))?;
            openai::embeddings::refuse_completion(&session).map_err(bad_request)?;
            let n_ctx = session.engine.n_ctx() as usize;
            let tool_use = match offered {
                Some(o) => Some(ToolUse::new(session.chat_template().map_err(js_error)?, o)),
                None => None,
            };
            let mut messages = match &tool_use {
                Some(t) => t.messages(&messages),
                None => messages,
            };
            if !images.is_empty() && !session.takes_images() {
                return Err(bad_request(
                    "the model reads no images: load it with a vision projector (mmproj)",
                ));
            }
            openai::place_images(&mut messages, images).map_err(bad_request)?;
            if let Some(text) = &settings.prediction {
                session.predict(text);
            }
            let mut sampler = openai::sampler(
                &mut session,
                settings.sampler,
                tool_use.as_ref(),
                settings.grammar.as_ref(),
                settings.log_probs,
            )
            .map_err(bad_request)?;
            // With tools the text is read as calls once it is whole, so it is not sent as it comes.
            let streamed = tool_use.is_none();
            let max_tokens = settings.max_tokens.unwrap_or(n_ctx);
            let mut on_text = |piece: Piece| {
                if !streamed {
                    return true;
                }
                let log_probs = match piece.log_probs {
                    [] => JsValue::UNDEFINED,
                    probs => {
                        let json = openai::log_probs::chat(piece.tokenizer, probs).to_string();
                        JsValue::from_str(&json)
                    }
                };
                let text = JsValue::from_str(piece.text);
                let reasoning = JsValue::from_str(piece.reasoning);
                let go_on = on_text.call3(&JsValue::NULL, &text, &log_probs, &reasoning);
                go_on.is_ok_and(|v| v.as_bool() != Some(false))
            };
            let completion = session
                .chat(
                    &mut messages,
                    &Extras {
                        tools: tool_use
                            .as_ref()
                            .map_or(Vec::new(), |t| t.template_tools().to_vec()),
                        variables,
                    },
                    (max_tokens, &settings.stop),
                    &mut sampler,
                    overflow,
                    &mut on_text,
                )
                .await;
            let completion = match completion {
                Ok(c) => c,
                Err(wick::Error::ContextFull(n)) => {
                    return Err(bad_request(format!(
                        "the conversation does not fit the context of {n} tokens \
                         (load with a larger nCtx, or with dropOldTurns to drop the oldest turns)"
                    )))
                }
                // An image the projector cannot take.
                Err(e @ wick::Error::Model(_)) => return Err(bad_request(e)),
                Err(e) => return Err(js_error(lost_or(&session.engine.gpu, e).await)),
            };
            let answer = openai::Answer::of(&completion, tool_use.as_ref());
            let result = ChatResult {
                finish_reason: answer.finish_reason,
                tool_calls: answer.calls,
                prompt_tokens: completion.prompt_tokens,
                completion_tokens: completion.tokens.len(),
                prompt_processed: completion.prompt_processed,
                prompt_ms: completion.prompt_time.as_secs_f64() * 1e3,
                generate_ms: completion.gen_time.as_secs_f64() * 1e3,
                read_back_bytes: completion.read_back_bytes,
                step_ms: StepMs::of(&completion.gen_steps, completion.gen_time),
                log_probs: settings.log_probs.map(|_| {
                    openai::log_probs::chat(&session.tokenizer, &completion.log_probs).to_string()
                }),
                text: answer.content,
                reasoning: completion.reasoning,
                prediction: completion.prediction.map(|p| PredictionTokens {
                    accepted: p.accepted,
                    rejected: p.rejected,
                }),
            };
            let value = serde_wasm_bindgen::to_value(&result)?;
            *last.borrow_mut() = Some(result);
            Ok(value)
        })
    }

    /// What a token costs and how fast the last reply went.
    pub fn stats(&self) -> Result<JsValue, JsValue> {
        let session = self
            .session
            .try_borrow()
            .map_err(|_| js_error("the model is busy with another request"))?;
        let engine = &session.engine;
        let last = self.last.borrow();
        let rate = |tokens: usize, ms: f64| (ms > 0.0).then(|| tokens as f64 / (ms / 1e3));
        let stats = Stats {
            adapter: self.adapter.clone(),
            architecture: engine.header.architecture().unwrap_or("").to_string(),
            n_ctx: engine.n_ctx(),
            dispatches_per_token: engine.stats.dispatches_per_token,
            submits_per_token: engine.stats.submits_per_token,
            weight_bytes_per_token: engine.stats.weight_bytes_per_token,
            row_bytes_per_token: engine.stats.row_bytes_per_token,
            tuned_shapes: engine.tuned_shapes().len(),
            untuned_shapes: engine.untuned_shapes().len(),
            subgroup_size: engine.gpu.subgroup_size,
            tokens_per_second: last
                .as_ref()
                .and_then(|l| rate(l.completion_tokens, l.generate_ms)),
            prompt_tokens_per_second: last
                .as_ref()
                .and_then(|l| rate(l.prompt_processed, l.prompt_ms)),
            last_prompt_tokens: last.as_ref().map(|l| l.prompt_tokens),
            last_prompt_processed: last.as_ref().map(|l| l.prompt_processed),
            read_back_bytes_per_token: last
                .as_ref()
                .map(|l| l.read_back_bytes as f64 / l.completion_tokens.max(1) as f64),
            step_ms: last.as_ref().and_then(|l| l.step_ms),
            wasm_memory_bytes: wasm_bindgen::memory()
                .unchecked_into::<js_sys::WebAssembly::Memory>()
                .buffer()
                .unchecked_into::<js_sys::ArrayBuffer>()
                .byte_length() as f64,
            speculation: session.speculation.as_ref().map(|s| {
                let measured = s.measured();
                let ms = |t: f64| t * 1e3;
                Speculated {
                    checks: s.stats.checks,
                    proposed: s.stats.proposed,
                    accepted: s.stats.accepted,
                    tokens_per_check: s.stats.tokens_per_check(),
                    step_ms: measured.step.map(ms),
                    check_ms: (measured.checks.iter())
                        .map(|&(rows, t)| (rows, ms(t)))
                        .collect(),
                    drafted_token_ms: measured.draft.map(ms),
                }
            }),
        };
        Ok(serde_wasm_bindgen::to_value(&stats)?)
    }

    /// Times one more candidate kernel for the model's shapes (matvecs', a prompt's recurrence's and
    /// attention's) that have no winner on this adapter yet, the largest matrices first (the first call only lists them); a shape's
    /// winner is used from its last candidate on. Resolves to { shapes, shapesDone, candidates, timed, finished, tuning }: `tuning` is JSON
    /// { adapter, tuning }, what `load` takes back (under the adapter's key) to start tuned next time,
    /// when this step finished a shape, else null. The caller runs steps when it has nothing else to
    /// do: each takes one candidate's timing, so a request waits for at most that.
    #[wasm_bindgen(js_name = tuneStep)]
    pub fn tune_step(&self) -> Promise {
        let session = self.session.clone();
        let tuner = self.tuner.clone();
        future_to_promise(async move {
            let mut session = session
                .try_borrow_mut()
                .map_err(|_| js_error("the model is busy with another request"))?;
            let engine = &mut session.engine;
            let mut tuner = tuner.borrow_mut();
            let shapes_before;
            match tuner.as_mut() {
                // The first step only says what there is to time, so progress shows from the start.
                None => {
                    *tuner = Some(engine.tuner(TuneShapes::New).await.map_err(js_error)?);
                    shapes_before = 0;
                }
                Some(tuner) => {
                    shapes_before = tuner.tuned().len();
                    engine.tune_step(tuner).await.map_err(js_error)?;
                }
            }
            let tuner = tuner.as_mut().expect("a tuner");
            let shapes_done = tuner.tuned().len();
            let tuning = (shapes_done > shapes_before).then(|| {
                let kept = serde_json::json!({
                    "adapter": engine.gpu.tuning_key(),
                    "tuning": *engine.gpu.tuning(),
                });
                kept.to_string()
            });
            let step = TuneStep {
                shapes: tuner.shapes,
                shapes_done,
                candidates: tuner.candidates,
                timed: tuner.timed,
                finished: tuner.finished(),
                tuning,
            };
            Ok(serde_wasm_bindgen::to_value(&step)?)
        })
    }

    /// Times the decode plan (`which` "decode") or a prompt's chunk ("prefill") on the GPU, as `wick
    /// bench --profile` does natively: resolves to { kernels: [[kernel, ms per run], ...] slowest
    /// first, each dispatch timed alone; wholeMs: the whole plan, its runs back to back in one submit;
    /// layerKinds: [[kind, layers, ms per run], ...] where the model names its layers' kinds },
    /// or null where the model has no prefill plan. For comparing the GPU's time with a whole step's.
    pub fn profile(&self, which: String) -> Promise {
        let session = self.session.clone();
        future_to_promise(async move {
            let plan = match which.as_str() {
                "decode" => Profiled::Decode,
                "prefill" => Profiled::Prefill,
                _ => return Err(js_error("profile takes 'decode' or 'prefill'")),
            };
            let mut session = session
                .try_borrow_mut()
                .map_err(|_| js_error("the model is busy with another request"))?;
            let Some(profile) = session.engine.profile(plan).await.map_err(js_error)? else {
                return Ok(JsValue::NULL);
            };
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            let kernels: Vec<(String, f64)> = profile
                .kernels
                .into_iter()
                .map(|(name, time)| (name, ms(time)))
                .collect();
            let value = ProfileMs {
                kernels,
                whole_ms: ms(profile.whole),
                layer_kinds: profile
                    .layer_kinds
                    .into_iter()
                    .map(|(kind, layers, time)| (kind, layers, ms(time)))
                    .collect(),
            };
            Ok(serde_wasm_bindgen::to_value(&value)?)
        })
    }

    /// Forgets the cached conversation.
    pub fn reset(&self) -> Result<(), JsValue> {
        let mut session = self
            .session
            .try_borrow_mut()
            .map_err(|_| js_error("the model is busy with another request"))?;
        session.reset();
        Ok(())
    }
}

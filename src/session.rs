//! A model with its tokenizer and what its KV cache holds: text in, text out, and chat turns that reuse
//! the cache of the turns already processed.

use crate::chat_template::{self, ChatMessage};
use crate::engine::{Engine, LoadOptions};
use crate::gguf::{read_header, ByteSource};
use crate::gpu::Gpu;
use crate::sampler::Sampler;
use crate::stop::StopStrings;
use crate::tokenizer::{StreamDecoder, Tokenizer};
use crate::Error;
use std::sync::Arc;
use web_time::{Duration, Instant};

/// Why generation stopped (OpenAI's finish_reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// An end-of-generation token.
    Stop,
    /// The token budget ran out.
    Length,
    /// The context filled up.
    ContextFull,
    /// The caller asked to stop.
    Cancelled,
}

#[derive(Clone, Debug)]
pub struct Completion {
    pub tokens: Vec<u32>,
    pub text: String,
    pub finish: FinishReason,
    /// Prompt tokens, and how many of them had to be processed (the rest were cached).
    pub prompt_tokens: usize,
    pub prompt_processed: usize,
    pub prompt_time: Duration,
    pub gen_time: Duration,
}

pub struct Session {
    pub engine: Engine,
    pub tokenizer: Tokenizer,
    /// The tokens whose keys and values sit in the cache, in order.
    cached: Vec<u32>,
}

impl Session {
    pub async fn load(
        gpu: Arc<Gpu>,
        source: &dyn ByteSource,
        options: &LoadOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Session, Error> {
        let header = read_header(source).await?;
        let tokenizer = Tokenizer::from_gguf(&header)?;
        let engine = Engine::load_with_header(gpu, header, source, options, progress).await?;
        Ok(Session {
            engine,
            tokenizer,
            cached: Vec::new(),
        })
    }

    /// Tokenizes a prompt as given, special tokens parsed, with BOS where the model wants one.
    pub fn tokenize_prompt(&self, text: &str) -> Vec<u32> {
        let mut tokens = Vec::new();
        if self.tokenizer.add_bos() {
            tokens.extend(self.tokenizer.bos());
        }
        tokens.extend(self.tokenizer.encode(text, true));
        tokens
    }

    /// Renders a conversation with the model's chat template, ready for the assistant's turn.
    pub fn chat_prompt(&self, messages: &[ChatMessage]) -> Result<String, Error> {
        let template = self
            .engine
            .header
            .get_str("tokenizer.chat_template")
            .ok_or_else(|| {
                Error::Model("the model has no chat template (tokenizer.chat_template)".into())
            })?;
        let piece = |id: Option<u32>| {
            id.map(|i| String::from_utf8_lossy(self.tokenizer.token_piece(i)).into_owned())
        };
        let bos = piece(self.tokenizer.bos()).unwrap_or_default();
        let eos = piece(self.tokenizer.eos()).unwrap_or_default();
        Ok(chat_template::render(template, messages, true, &bos, &eos)?)
    }

    /// Forgets the cache.
    pub fn reset(&mut self) {
        self.cached.clear();
        self.engine.rewind(0);
    }

    /// Brings the cache to hold `prompt`, reusing the longest prefix it already holds, and returns the
    /// logits after the last prompt token and how many tokens were processed.
    async fn feed(&mut self, prompt: &[u32]) -> Result<(Vec<f32>, usize), Error> {
        if prompt.is_empty() {
            return Err(Error::Model("the prompt is empty".into()));
        }
        if prompt.len() > self.engine.n_ctx() as usize {
            return Err(Error::ContextFull(self.engine.n_ctx()));
        }
        let common = self
            .cached
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count();
        // The last prompt token is always run again: its logits are needed.
        let keep = common.min(prompt.len() - 1);
        self.engine.rewind(keep as u32);
        self.cached.truncate(keep);
        let rest = &prompt[keep..];
        let logits = self.engine.prefill(rest).await?;
        self.cached.extend_from_slice(rest);
        Ok((logits, rest.len()))
    }

    /// Generates after `prompt` until an end-of-generation token, one of the `stop` strings (which is not
    /// returned), `max_tokens`, a full context, or `on_text` returning false. `on_text` receives the text
    /// as it completes into valid UTF-8 and can no longer turn into a stop string.
    pub async fn complete(
        &mut self,
        prompt: &[u32],
        max_tokens: usize,
        stop: &[String],
        sampler: &mut Sampler,
        on_text: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Completion, Error> {
        let start = Instant::now();
        let (mut logits, processed) = self.feed(prompt).await?;
        let prompt_time = start.elapsed();
        let gen_start = Instant::now();
        let mut decoder = StreamDecoder::default();
        let mut stops = StopStrings::new(stop);
        let mut tokens = Vec::new();
        let mut text = String::new();
        let mut stopped_by_string = false;
        let finish = loop {
            if tokens.len() >= max_tokens {
                break FinishReason::Length;
            }
            let id = sampler.sample(&logits, &self.cached);
            if self.tokenizer.is_end_of_generation(id) {
                break FinishReason::Stop;
            }
            tokens.push(id);
            let (piece, stopped) = stops.push(&decoder.push(&self.tokenizer, id));
            text.push_str(&piece);
            if !piece.is_empty() && !on_text(&piece) {
                break FinishReason::Cancelled;
            }
            if stopped {
                stopped_by_string = true;
                break FinishReason::Stop;
            }
            if self.engine.pos() >= self.engine.n_ctx() {
                break FinishReason::ContextFull;
            }
            logits = self
                .engine
                .step(id, true)
                .await?
                .expect("logits were asked for");
            self.cached.push(id);
        };
        if !stopped_by_string {
            let (tail, _) = stops.push(&decoder.finish());
            let tail = tail + &stops.finish();
            if !tail.is_empty() {
                on_text(&tail);
                text.push_str(&tail);
            }
        }
        Ok(Completion {
            tokens,
            text,
            finish,
            prompt_tokens: prompt.len(),
            prompt_processed: processed,
            prompt_time,
            gen_time: gen_start.elapsed(),
        })
    }
}

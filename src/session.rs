//! A model with its tokenizer and what its KV cache holds: text in, text out, and chat turns that reuse
//! the cache of the turns already processed.

use crate::chat_template::{self, ChatMessage, Extras};
use crate::engine::{Engine, LoadOptions, Pending, Totals};
use crate::gguf::{read_header, ByteSource};
use crate::gpu::Gpu;
use crate::grammar::{Constraint, Grammar, Vocabulary};
use crate::reasoning::{Channels, Format};
use crate::reply::{Completion, FinishReason, Piece, Reply};
use crate::sampler::{Sampler, TokenLogProb};
use crate::speculate::{Prediction, Speculation};
use crate::tokenizer::Tokenizer;
use crate::Error;
use std::collections::VecDeque;
use std::sync::Arc;
use web_time::{Duration, Instant};

mod ahead;
mod images;
mod speculative;

pub use crate::vision::IMAGE_MARKER;

/// What a chat does when the conversation and its reply no longer fit the context.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overflow {
    /// Stop there: the reply ends with FinishReason::ContextFull, or a conversation that does not fit
    /// at all is refused with Error::ContextFull.
    #[default]
    Stop,
    /// Drop the oldest turns (a user message and the replies after it; system messages and the last
    /// user message stay) and re-read what remains, then go on.
    DropOldestTurns,
}

pub struct Session {
    pub engine: Engine,
    pub tokenizer: Arc<Tokenizer>,
    /// The tokens whose keys and values sit in the cache, in order.
    cached: Vec<u32>,
    /// The vocabulary as grammars see it, made by the first reply that has one.
    grammar_vocabulary: Option<Vocabulary>,
    /// Where replies take several tokens a step from a draft (`speculate`); the engine must have
    /// been loaded to check them (`LoadOptions::check_tokens`).
    pub speculation: Option<Speculation>,
    /// What the next reply is expected to say (`predict`), taken by the reply.
    prediction: Option<Prediction>,
    /// The reply's step submitted ahead of the token it runs being read back (`step_plain`), and
    /// where the sampler's generator stood before its draw.
    ahead: Option<(Pending, u64)>,
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
            tokenizer: Arc::new(tokenizer),
            cached: Vec::new(),
            grammar_vocabulary: None,
            speculation: None,
            prediction: None,
            ahead: None,
        })
    }

    /// A constraint for a sampler: the reply must match `grammar`. Refused, saying why, where the
    /// grammar does not parse or uses what the grammar engine does not take.
    pub fn constraint(&mut self, grammar: &Grammar) -> Result<Constraint, Error> {
        let vocabulary = match &mut self.grammar_vocabulary {
            Some(v) => v,
            none => none.insert(Vocabulary::new(&self.tokenizer)?),
        };
        Ok(Constraint::new(vocabulary, &self.tokenizer, grammar)?)
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

    /// Tokenizes one input to embed as llama.cpp's server does: special tokens parsed, BOS (BERT's
    /// [CLS]) and the end-of-input token (EOS, BERT's [SEP]) where the model adds them
    /// (Qwen3-Embedding reads its vector off the EOS at the end).
    pub fn tokenize_input(&self, text: &str) -> Vec<u32> {
        let mut tokens = self.tokenize_prompt(text);
        tokens.extend(self.tokenizer.end_of_input());
        tokens
    }

    /// The embedding of each of `inputs` (`tokenize_input`), of unit length. The cache is left
    /// empty: the next reply reads its prompt afresh.
    pub async fn embed(&mut self, inputs: &[&[u32]]) -> Result<Vec<Vec<f32>>, Error> {
        self.cached.clear();
        let mut vectors = self.engine.embed(inputs).await?;
        for v in &mut vectors {
            crate::embeddings::normalize(v);
        }
        Ok(vectors)
    }

    /// The model's chat template, or its family's standard one for a file without.
    pub fn chat_template(&self) -> Result<&str, Error> {
        let (template, _) = chat_template::of_model(&self.engine.header).ok_or_else(|| {
            Error::Model(
                "the model has no chat template (tokenizer.chat_template), nor its family a standard one"
                    .into(),
            )
        })?;
        Ok(template)
    }

    /// Renders a conversation with the model's chat template, ready for the assistant's turn, with the
    /// tools the template lays out and the variables a request sets (`extras`). A template that writes BOS itself (Gemma,
    /// Llama 3) loses it where `tokenize_prompt` adds one, as llama.cpp does: one BOS, not two.
    pub fn chat_prompt(&self, messages: &[ChatMessage], extras: &Extras) -> Result<String, Error> {
        let template = self.chat_template()?;
        let piece = |id: Option<u32>| {
            id.map(|i| String::from_utf8_lossy(self.tokenizer.token_piece(i)).into_owned())
        };
        let bos = piece(self.tokenizer.bos()).unwrap_or_default();
        let eos = piece(self.tokenizer.eos()).unwrap_or_default();
        let limits = chat_template::Limits::default();
        let text =
            chat_template::render_with(template, messages, extras, true, &bos, &eos, limits)?;
        Ok(match text.strip_prefix(bos.as_str()) {
            Some(rest) if self.tokenizer.add_bos() && !bos.is_empty() => rest.to_string(),
            _ => text,
        })
    }

    /// A reply to a chat whose rendered prompt is `prompt`: where the model's template marks
    /// reasoning (`reasoning::Format`), the reasoning is read apart from the answer.
    pub fn chat_reply(&self, prompt: &str, max_tokens: usize, stop: &[String]) -> Reply {
        let reply = Reply::new(max_tokens, stop);
        let format = self.chat_template().ok().and_then(Format::of_template);
        match format {
            Some(format) => reply.with_reasoning(Channels::after(format, prompt), &self.tokenizer),
            None => reply,
        }
    }

    /// Says what the next reply is expected to say (OpenAI's predicted outputs), as text: where the
    /// session speculates (`speculation`), that reply's drafts come from it first, so a reply that
    /// says much of it takes several tokens a step. What the reply says is the model's own as ever;
    /// the reply's `Completion::prediction` counts the predicted tokens kept and those not.
    pub fn predict(&mut self, text: &str) {
        self.prediction = Some(Prediction::new(self.tokenizer.encode(text, false)));
    }

    /// Tokens the model's vocabulary holds: ids 0 to this less one.
    pub fn n_vocab(&self) -> u32 {
        self.engine.n_vocab()
    }

    /// Forgets the cache.
    pub fn reset(&mut self) {
        self.cached.clear();
        self.engine.rewind(0);
    }

    /// Brings the cache to hold `prompt` up to its last run, reusing the longest prefix it already
    /// holds, and returns where that run begins (the step that runs it picks the first reply token)
    /// and how many tokens it leaves to process, the last run included. The last run is the
    /// prompt's last chunk, whose head gives the logits after it in the chunk's pass. A model with
    /// recurrent states goes back to its latest snapshot within the reused prefix, and runs the last
    /// token alone after keeping one: what regenerating, editing the last message or dropping old
    /// turns return to.
    async fn feed(&mut self, prompt: &[u32]) -> Result<(usize, usize), Error> {
        if prompt.is_empty() {
            return Err(Error::Model("the prompt is empty".into()));
        }
        if prompt.len() > self.engine.n_ctx() as usize {
            return Err(Error::ContextFull(self.engine.n_ctx()));
        }
        // A step left ahead by a reply that failed: the cache is rewound past it below.
        self.ahead = None;
        // An image's ids are its own (`Engine::hold_image`): equal tokens are the same rows.
        let common = (self.cached.iter().zip(prompt))
            .take_while(|(a, b)| a == b)
            .count();
        self.engine.forget_images(prompt.iter().copied());
        // The last prompt token is always run again: the next token is picked from its logits.
        let keep = self.engine.rewind(common.min(prompt.len() - 1) as u32) as usize;
        self.cached.truncate(keep);
        let last_run = match self.engine.keeps_states() {
            true => prompt.len() - 1,
            false => keep + self.engine.prompt_end(&prompt[keep..])?,
        };
        let rest = &prompt[keep..last_run];
        self.engine.feed(rest).await?;
        self.cached.extend_from_slice(rest);
        self.engine.snapshot().await?;
        Ok((last_run, prompt.len() - keep))
    }

    /// Runs `tokens` at the next positions (a token, or a prompt's last run) and picks the token
    /// after the last, reading back what the sampler needs: the GPU's choice (greedy, or the
    /// sampler's made on the GPU), its top candidates, or the logits; and the picked token's
    /// log-probability where the sampler reports them (`Sampler::log_probs`: then a greedy step
    /// reads candidates, with the row's log-sum-exp).
    async fn step(
        &mut self,
        tokens: &[u32],
        sampler: &mut Sampler,
    ) -> Result<(u32, Option<TokenLogProb>), Error> {
        let (&token, before) = tokens.split_last().expect("a token to run");
        let cached = self.cached.len();
        self.cached.extend_from_slice(before);
        let history = sampler.history(&self.cached, token);
        self.cached.truncate(cached);
        let n_logits = self.engine.n_logits();
        let want = sampler.want(&history, n_logits, &mut self.engine.stats.totals.mask)?;
        let step = self.engine.step_wanted(tokens, &want).await?;
        let mask_time = &mut self.engine.stats.totals.mask;
        let (next, log_prob) = sampler.pick_from_step(step, &history, mask_time)?;
        self.cached.extend_from_slice(tokens);
        sampler.accept(next, &mut self.engine.stats.totals.mask)?;
        Ok((next, log_prob))
    }

    /// Generates `reply` after `prompt` until an end-of-generation token, one of its stop strings
    /// (which is not returned), its token budget, a full context, or `on_text` returning false.
    /// `on_text` receives the text as it completes into valid UTF-8 and can no longer turn into a stop
    /// string, with its tokens' log-probabilities where the sampler reports them.
    pub async fn complete(
        &mut self,
        prompt: &[u32],
        mut reply: Reply,
        sampler: &mut Sampler,
        on_text: &mut dyn FnMut(Piece) -> bool,
    ) -> Result<Completion, Error> {
        let start = Instant::now();
        let read_before = self.engine.stats.totals.read_bytes;
        let mut prediction = self.prediction.take();
        let (last_run, processed) = self.feed(prompt).await?;
        let first = self.step(&prompt[last_run..], sampler).await?;
        let prompt_time = start.elapsed();
        let gen_start = Instant::now();
        let totals_before = self.engine.stats.totals;
        // Tokens picked and not yet given to the reply: one a step, or several where a speculative
        // step kept a draft (all in the cache then, but the last).
        let mut picked = VecDeque::from([first]);
        let finish = loop {
            let (id, log_prob) = picked.pop_front().expect("a token picked");
            // Room for the step that runs `id`: in the cache, or already running (`step_plain`).
            let room = !picked.is_empty()
                || self.ahead.is_some()
                || self.engine.pos() < self.engine.n_ctx();
            if let Some(finish) =
                reply.push(&self.tokenizer, (id, log_prob), sampler, room, on_text)
            {
                break Ok(finish);
            }
            if picked.is_empty() {
                let reply = (prompt.len(), prediction.as_mut(), reply.tokens_left());
                match self.step_after(id, sampler, reply).await {
                    Ok(more) => picked.extend(more),
                    Err(e) => break Err(e),
                }
            }
        };
        self.drop_ahead(sampler);
        let finish = finish?;
        Ok(Completion {
            prompt_tokens: prompt.len(),
            prompt_processed: processed,
            prompt_time,
            gen_time: gen_start.elapsed(),
            read_back_bytes: self.engine.stats.totals.read_bytes - read_before,
            gen_steps: self.engine.stats.totals - totals_before,
            prediction,
            ..reply.finish(finish, &self.tokenizer, on_text)
        })
    }

    /// Generates the assistant's reply to a conversation, rendered with the model's chat template (and
    /// `extras`: tools, for a template that lays them out, and variables), of at most `max_tokens`,
    /// ended early by any of the `stop` strings; the turns already in the cache are not run again.
    /// Where the conversation or the reply outgrows the
    /// context, `overflow` decides: with DropOldestTurns the oldest turns are removed from `messages`
    /// (so the caller's history shrinks with them) and the rest is read again before the reply goes on.
    pub async fn chat(
        &mut self,
        messages: &mut Vec<ChatMessage>,
        extras: &Extras,
        (max_tokens, stop): (usize, &[String]),
        sampler: &mut Sampler,
        overflow: Overflow,
        on_text: &mut dyn FnMut(Piece) -> bool,
    ) -> Result<Completion, Error> {
        let n_ctx = self.engine.n_ctx() as usize;
        let mut reply = Completion {
            tokens: Vec::new(),
            log_probs: Vec::new(),
            text: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
            finish: FinishReason::ContextFull,
            prompt_tokens: 0,
            prompt_processed: 0,
            prompt_time: Duration::ZERO,
            gen_time: Duration::ZERO,
            read_back_bytes: 0,
            gen_steps: Totals::default(),
            prediction: None,
        };
        loop {
            let mut text = self.chat_prompt(messages, extras)?;
            let images: Vec<_> = messages
                .iter()
                .flat_map(|m| m.images.iter().cloned())
                .collect();
            let mut prompt = self.tokenize_prompt_with_images(&text, &images).await?;
            // The reply so far is read again after the shortened conversation.
            prompt.extend_from_slice(&reply.tokens);
            text += &self.tokenizer.decode(&reply.tokens, true);
            let fits = prompt.len() < n_ctx; // room for one more token at least
            if !fits {
                if overflow == Overflow::DropOldestTurns && drop_oldest_turn(messages) {
                    continue;
                }
                if reply.tokens.is_empty() {
                    return Err(Error::ContextFull(n_ctx as u32));
                }
                return Ok(reply);
            }
            if reply.tokens.is_empty() {
                reply.prompt_tokens = prompt.len(); // the conversation as it was first run
            }
            let left = max_tokens - reply.tokens.len();
            let part_reply = self.chat_reply(&text, left, stop);
            let part = self.complete(&prompt, part_reply, sampler, on_text).await?;
            reply.tokens.extend_from_slice(&part.tokens);
            reply.log_probs.extend(part.log_probs);
            reply.text.push_str(&part.text);
            reply.reasoning.push_str(&part.reasoning);
            reply.calls.extend(part.calls);
            reply.prompt_processed += part.prompt_processed;
            reply.prompt_time += part.prompt_time;
            reply.gen_time += part.gen_time;
            reply.read_back_bytes += part.read_back_bytes;
            reply.gen_steps = reply.gen_steps + part.gen_steps;
            reply.prediction = reply.prediction.or(part.prediction);
            reply.finish = part.finish;
            let go_on = part.finish == FinishReason::ContextFull
                && overflow == Overflow::DropOldestTurns
                && reply.tokens.len() < max_tokens
                && drop_oldest_turn(messages);
            if !go_on {
                return Ok(reply);
            }
        }
    }
}

/// Removes the oldest turn: the first user message that is not the last one, and the messages after it
/// up to the next user message. System messages stay. False when nothing can go.
fn drop_oldest_turn(messages: &mut Vec<ChatMessage>) -> bool {
    let users: Vec<usize> = (0..messages.len())
        .filter(|&i| messages[i].role == "user")
        .collect();
    let [first, next, ..] = users[..] else {
        return false;
    };
    let mut i = 0;
    messages.retain(|m| {
        let keep = i < first || i >= next || m.role == "system";
        i += 1;
        keep
    });
    true
}

//! A reply as it is generated, one picked token at a time: its budget, its stop strings, the text
//! decoded so far. `Session::complete` drives one; a server's parallel slots (`slots::Slots`) drive
//! several, each step picking a token for all of them at once.

use crate::engine::Totals;
use crate::reasoning::{Channels, Split};
use crate::sampler::{Sampler, TokenLogProb};
use crate::speculate::Prediction;
use crate::stop::StopStrings;
use crate::tokenizer::{StreamDecoder, Tokenizer};
use crate::tools::Call;
use web_time::Duration;

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
    /// Each of `tokens`' log-probability, where the sampler reports them (`Sampler::log_probs`).
    pub log_probs: Vec<TokenLogProb>,
    /// The answer; where the model's reasoning is read apart (`Session::chat_reply`), without it.
    pub text: String,
    /// The reasoning the model wrote before its answer, markers dropped (empty for most models).
    pub reasoning: String,
    /// The functions the reply called, where its format marks calls itself (harmony's messages to
    /// functions; `tools::ToolUse::read` finds the others' in `text`).
    pub calls: Vec<Call>,
    pub finish: FinishReason,
    /// Prompt tokens, and how many of them had to be processed (the rest were cached).
    pub prompt_tokens: usize,
    pub prompt_processed: usize,
    pub prompt_time: Duration,
    pub gen_time: Duration,
    /// Bytes the steps copied back from the GPU for the sampler.
    pub read_back_bytes: u64,
    /// What the engine's runs while generating (after the prompt) cost: set against `gen_time`, what
    /// the time between steps went to.
    pub gen_steps: Totals,
    /// What the reply was predicted to say (`Session::predict`), with what the checks made of it.
    pub prediction: Option<Prediction>,
}

/// Text a reply completes, with the log-probabilities of the tokens taken since the last piece
/// (where the sampler reports them; empty otherwise) and the tokenizer that names those tokens.
/// A reply split by its reasoning format has its answer in `text`, its reasoning in `reasoning`.
pub struct Piece<'a> {
    pub text: &'a str,
    pub reasoning: &'a str,
    pub log_probs: &'a [TokenLogProb],
    pub tokenizer: &'a Tokenizer,
}

pub struct Reply {
    max_tokens: usize,
    decoder: StreamDecoder,
    stops: StopStrings,
    /// Where the reply's reasoning is read apart from its answer.
    channels: Option<Channels>,
    tokens: Vec<u32>,
    log_probs: Vec<TokenLogProb>,
    /// How many of `log_probs` went out with a piece.
    log_probs_sent: usize,
    text: String,
    reasoning: String,
    /// Functions the reply called, where its format marks calls (harmony).
    calls: Vec<Call>,
    /// A stop string ended the reply: what was held back is not part of it.
    stopped_by_string: bool,
}

impl Reply {
    pub fn new(max_tokens: usize, stop: &[String]) -> Reply {
        Reply {
            max_tokens,
            decoder: StreamDecoder::default(),
            stops: StopStrings::new(stop),
            channels: None,
            tokens: Vec::new(),
            log_probs: Vec::new(),
            log_probs_sent: 0,
            text: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
            stopped_by_string: false,
        }
    }

    /// The reply's reasoning goes apart from its answer, read by `channels` (whose markers the
    /// decoder writes out where they are control tokens). Stop strings apply to the answer.
    pub fn with_reasoning(mut self, channels: Channels, tokenizer: &Tokenizer) -> Reply {
        self.decoder = StreamDecoder::showing(tokenizer, &channels.format().markers());
        self.channels = Some(channels);
        self
    }

    /// The tokens taken so far.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// How many more tokens it may take at most.
    pub fn tokens_left(&self) -> usize {
        self.max_tokens.saturating_sub(self.tokens.len())
    }

    /// Takes the token a step picked (with its log-probability where the sampler reports them) and
    /// hands `on_text` the text it completes: valid UTF-8 that can no longer turn into a stop string,
    /// with the log-probabilities of the tokens that made it.
    /// Returns why the reply ends here, or None where another step follows; `room` says whether the
    /// context holds another position. `sampler` has accepted the token already: a grammar that can
    /// take nothing more ends the reply.
    pub fn push(
        &mut self,
        tokenizer: &Tokenizer,
        (id, log_prob): (u32, Option<TokenLogProb>),
        sampler: &Sampler,
        room: bool,
        on_text: &mut dyn FnMut(Piece) -> bool,
    ) -> Option<FinishReason> {
        if self.max_tokens == 0 {
            return Some(FinishReason::Length);
        }
        if tokenizer.is_end_of_generation(id) {
            return Some(FinishReason::Stop);
        }
        self.tokens.push(id);
        self.log_probs.extend(log_prob);
        let text = self.decoder.push(tokenizer, id);
        let split = self.split(text);
        let (piece, stopped) = self.stops.push(&split.content);
        self.text.push_str(&piece);
        self.reasoning.push_str(&split.reasoning);
        self.calls.extend(split.calls);
        let said = !piece.is_empty() || !split.reasoning.is_empty();
        if said && !self.send(&piece, &split.reasoning, tokenizer, on_text) {
            return Some(FinishReason::Cancelled);
        }
        if stopped {
            self.stopped_by_string = true;
            return Some(FinishReason::Stop);
        }
        if sampler.constraint.as_ref().is_some_and(|c| c.is_finished()) {
            return Some(FinishReason::Stop);
        }
        // The last token allowed is not run: nothing would read what comes after it.
        if self.tokens.len() >= self.max_tokens {
            return Some(FinishReason::Length);
        }
        if !room {
            return Some(FinishReason::ContextFull);
        }
        None
    }

    /// Ends the reply for `finish`: the text held back (an unfinished character, the start of a stop
    /// string that never completed) goes to `on_text` and the reply, unless a stop string ended it,
    /// with the log-probabilities not sent yet (a stop string's tokens' among them).
    /// The prompt's counts and the times are the caller's to fill in.
    pub fn finish(
        mut self,
        finish: FinishReason,
        tokenizer: &Tokenizer,
        on_text: &mut dyn FnMut(Piece) -> bool,
    ) -> Completion {
        let mut tail = String::new();
        let mut reasoning = String::new();
        if !self.stopped_by_string {
            let text = self.decoder.finish();
            let mut split = self.split(text);
            if let Some(channels) = &mut self.channels {
                let last = channels.finish();
                split.content += &last.content;
                split.reasoning += &last.reasoning;
                split.calls.extend(last.calls);
            }
            let (held, _) = self.stops.push(&split.content);
            tail = held + &self.stops.finish();
            reasoning = split.reasoning;
            self.calls.extend(split.calls);
            self.text.push_str(&tail);
            self.reasoning.push_str(&reasoning);
        }
        let unsent = self.log_probs_sent < self.log_probs.len();
        if !tail.is_empty() || !reasoning.is_empty() || unsent {
            self.send(&tail, &reasoning, tokenizer, on_text);
        }
        Completion {
            tokens: self.tokens,
            log_probs: self.log_probs,
            text: self.text,
            reasoning: self.reasoning,
            calls: self.calls,
            finish,
            prompt_tokens: 0,
            prompt_processed: 0,
            prompt_time: Duration::ZERO,
            gen_time: Duration::ZERO,
            read_back_bytes: 0,
            gen_steps: Default::default(),
            prediction: None,
        }
    }

    /// Decoded text split into reasoning and answer (all answer where the reply is not split).
    fn split(&mut self, text: String) -> Split {
        match &mut self.channels {
            Some(channels) => channels.push(&text),
            None => Split {
                content: text,
                ..Default::default()
            },
        }
    }

    fn send(
        &mut self,
        text: &str,
        reasoning: &str,
        tokenizer: &Tokenizer,
        on_text: &mut dyn FnMut(Piece) -> bool,
    ) -> bool {
        let log_probs = &self.log_probs[self.log_probs_sent..];
        self.log_probs_sent = self.log_probs.len();
        on_text(Piece {
            text,
            reasoning,
            log_probs,
            tokenizer,
        })
    }
}

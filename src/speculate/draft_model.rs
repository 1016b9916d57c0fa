//! A smaller model drafting for a larger one: it keeps a cache of its own, brought to the larger
//! model's tokens before each draft, and decodes ahead of it one token at a time, greedy drafts a
//! step ahead of what the CPU reads back (`DraftModel::draft`). The token it lacks after a draft
//! that all stood (the last drafted, which it proposed but never read) goes in with the next
//! draft's first token, two rows of one run: on an adapter that computes rather than waits on
//! memory, a run of one token through the prompt's plan costs more than a drafted token does.

use super::{Draft, DraftLimits};
use crate::engine::{Engine, LoadOptions, Pending, StepTokens};
use crate::gguf::{read_header, ByteSource};
use crate::gpu::Gpu;
use crate::sampler::{Sampler, SequenceStep, Want};
use crate::tokenizer::Tokenizer;
use crate::Error;
use std::sync::Arc;

pub struct DraftModel {
    pub engine: Engine,
    /// The tokens whose keys and values sit in the draft's cache, in order.
    cached: Vec<u32>,
    /// Tokens after `cached` that the next draft reads in one run with its first token.
    unread: Vec<u32>,
}

/// Rows of a draft model's check (`Engine::check`): the tokens it lacks and the next draft's first.
const CATCH_UP_ROWS: u32 = 2;

/// The tokens a draft model proposes among unless told: those its vocabulary lists first
/// (`LoadOptions::head_rows`). A small model's head is a large share of its step (Qwen2.5 0.5B's,
/// 151,936 rows of Q8_0, 145 of the 392 MB it reads a token), and replies are mostly common tokens; a
/// rare one the draft cannot propose is the model's own pick after the draft.
pub const DRAFT_HEAD_ROWS: u32 = 32768;

impl DraftModel {
    /// A draft model for a model with tokenizer `target`: refused unless every token the draft
    /// can propose is the same token of the model's vocabulary.
    pub fn new(engine: Engine, draft: &Tokenizer, target: &Tokenizer) -> Result<DraftModel, Error> {
        same_vocabulary(draft, target)?;
        Ok(DraftModel {
            engine,
            cached: Vec::new(),
            unread: Vec::new(),
        })
    }

    /// Loads the draft in `source` for a model with tokenizer `target`, on the same GPU, as
    /// `options` say (the model's context and prompt batch, as a rule; its head's rows
    /// `DRAFT_HEAD_ROWS` unless they say): its vocabulary is checked before a weight is read.
    /// `progress` receives (bytes loaded, bytes in all).
    pub async fn load(
        gpu: Arc<Gpu>,
        source: &dyn ByteSource,
        options: &LoadOptions,
        target: &Tokenizer,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<DraftModel, Error> {
        let header = read_header(source).await?;
        let tokenizer = Tokenizer::from_gguf(&header)?;
        same_vocabulary(&tokenizer, target)?;
        let options = LoadOptions {
            check_tokens: options.check_tokens.max(CATCH_UP_ROWS),
            head_rows: options.head_rows.or(Some(DRAFT_HEAD_ROWS)),
            ..options.clone()
        };
        let engine = Engine::load_with_header(gpu, header, source, &options, progress).await?;
        DraftModel::new(engine, &tokenizer, target)
    }

    /// Brings the draft's cache to hold `tokens` but the last, reusing what it holds in common with
    /// them; the last of those it lacks may wait to be read with the draft's first token (`unread`).
    /// False where they do not fit its context with room to draft.
    pub async fn catch_up(&mut self, tokens: &[u32]) -> Result<bool, Error> {
        let Some((_, before)) = tokens.split_last() else {
            return Ok(false);
        };
        if tokens.len() >= self.engine.n_ctx() as usize {
            return Ok(false);
        }
        let common = (self.cached.iter().zip(before))
            .take_while(|(a, b)| a == b)
            .count();
        let kept = self.engine.rewind(common as u32) as usize;
        self.cached.truncate(kept);
        let lacking = &before[kept..];
        // A recurrent state is kept where the cache is caught up (below), so it reads them all now.
        let waits = match self.engine.keeps_states() {
            true => 0,
            false => lacking.len().min(self.engine.check_tokens() as usize - 1),
        };
        let (fed, waiting) = lacking.split_at(lacking.len() - waits);
        self.unread = waiting.to_vec();
        self.engine.feed(fed).await?;
        self.cached.extend_from_slice(fed);
        // Fed runs read nothing back: wait for them here, or the first drafted token waits.
        self.engine.gpu.finished().await?;
        // A recurrent state goes back to a snapshot, not to any position: keep one here, where the
        // next draft's tokens begin to differ at the earliest.
        self.engine.snapshot().await?;
        Ok(true)
    }

    /// Drafts up to `n` tokens after `token` into `draft`, each drawn from the draft's step as
    /// `Draft::ask` and `take_drawn` say (`seen`: the tokens so far). Where the draft's steps ask
    /// for nothing but the GPU's choice (a greedy reply with no grammar or log-probabilities) and
    /// its engine allows, each step is submitted before the one before it is read back
    /// (`Engine::submit_step`), and a step past where the draft stops is taken back.
    pub async fn draft(
        &mut self,
        draft: &mut Draft,
        (sampler, limits): (&mut Sampler, &mut DraftLimits<'_>),
        seen: &mut Vec<u32>,
        mut token: u32,
        n: usize,
    ) -> Result<(), Error> {
        let n = n.min(self.room());
        let n_logits = self.engine.n_logits();
        let mut ahead: Option<Pending> = None;
        for i in 0..n {
            let asked = draft.ask(sampler, seen, token, n_logits);
            // What a draft's steps ask is the same for all of them (the reply's sampler's).
            let step = match matches!(asked.want, Want::Choice) && self.engine.steps_ahead() {
                _ if !self.unread.is_empty() => self.step_after_unread(token, &asked.want).await?,
                true => {
                    let current = match ahead.take() {
                        Some(step) => step,
                        None => {
                            (self
                                .engine
                                .submit_step(StepTokens::Ids(&[token]), &asked.want))
                            .await?
                        }
                    };
                    self.cached.push(token);
                    if i + 1 < n {
                        let next = StepTokens::ChosenIn(&current);
                        ahead = Some(self.engine.submit_step(next, &asked.want).await?);
                    }
                    self.engine.finish_step(current).await?
                }
                false => self.step(token, &asked.want).await?,
            };
            match draft.take_drawn(&asked, &step, sampler, limits)? {
                Some(next) => token = next,
                None => break,
            }
        }
        if let Some(step) = ahead {
            self.engine.drop_step(step);
        }
        Ok(())
    }

    /// Runs the tokens the cache lacks and `token` after them in one run, and reads back what `want`
    /// asks after `token`.
    async fn step_after_unread(&mut self, token: u32, want: &Want) -> Result<SequenceStep, Error> {
        let mut tokens = std::mem::take(&mut self.unread);
        tokens.push(token);
        let mut wants = vec![Want::Choice; tokens.len() - 1];
        wants.push(want.clone());
        let mut steps = self.engine.check(&tokens, &wants).await?;
        self.cached.extend_from_slice(&tokens);
        Ok(steps.pop().expect("a row for each token"))
    }

    /// Runs `token` at the draft's next position and reads back what `want` asks after it.
    async fn step(&mut self, token: u32, want: &Want) -> Result<SequenceStep, Error> {
        let step = self.engine.step_wanted(&[token], want).await?;
        self.cached.push(token);
        Ok(step)
    }

    /// Room left in the draft's context, past the tokens it has yet to read.
    pub fn room(&self) -> usize {
        (self.engine.n_ctx() - self.engine.pos()) as usize - self.unread.len()
    }
}

/// Refuses a draft whose vocabulary is not the model's: a token id the draft may propose that means
/// another token to the model, or none. (A model with more tokens than its draft is fine.)
pub fn same_vocabulary(draft: &Tokenizer, target: &Tokenizer) -> Result<(), Error> {
    if draft.vocab_size() > target.vocab_size() {
        return Err(Error::Model(format!(
            "the draft model's vocabulary has {} tokens, the model's {}: token {} ({:?}) is the draft's alone",
            draft.vocab_size(),
            target.vocab_size(),
            target.vocab_size(),
            draft.token_text(target.vocab_size() as u32).unwrap_or(""),
        )));
    }
    let differs =
        (0..draft.vocab_size() as u32).find(|&id| draft.token_text(id) != target.token_text(id));
    if let Some(id) = differs {
        return Err(Error::Model(format!(
            "the draft model's vocabulary differs from the model's at token {id}: {:?} in the draft, {:?} in the model",
            draft.token_text(id).unwrap_or(""),
            target.token_text(id).unwrap_or(""),
        )));
    }
    Ok(())
}

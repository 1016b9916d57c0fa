//! A reply's step where the session speculates (`Session::speculation`): a draft of the next few
//! tokens, checked in one run of the model, and the tokens the sampler keeps of it.

use super::Session;
use crate::sampler::{Sampler, TokenLogProb};
use crate::speculate::{Draft, DraftLimits, Drafter, Picked, Prediction, Speculation};
use crate::Error;
use web_time::Instant;

/// The reply a step belongs to: where in the cache it starts (its prompt's length), what it is
/// predicted to say, if anything, and how many more tokens it may take.
pub(super) type ReplyAt<'a> = (usize, Option<&'a mut Prediction>, usize);

impl Session {
    /// Runs `id`, the token picked last in `reply`, and returns the tokens picked after it with
    /// their log-probabilities where the sampler reports them: one, or where the session speculates
    /// and a draft is at hand, the drafted tokens that stand and the model's own after them.
    pub(super) async fn step_after(
        &mut self,
        id: u32,
        sampler: &mut Sampler,
        reply: ReplyAt<'_>,
    ) -> Result<Vec<(u32, Option<TokenLogProb>)>, Error> {
        let Some(mut speculation) = self.speculation.take() else {
            // A step ahead only where the reply may take a token after this step's.
            let ahead = reply.2 > 1;
            return Ok(vec![self.step_plain(id, sampler, ahead).await?]);
        };
        let picked = self
            .step_speculating(id, sampler, &mut speculation, reply)
            .await;
        self.speculation = Some(speculation);
        picked
    }

    async fn step_speculating(
        &mut self,
        id: u32,
        sampler: &mut Sampler,
        speculation: &mut Speculation,
        (reply_start, prediction, _): ReplyAt<'_>,
    ) -> Result<Vec<(u32, Option<TokenLogProb>)>, Error> {
        let room = (self.engine.n_ctx() - self.engine.pos()) as usize;
        let rows = (self.engine.check_tokens() as usize).min(room);
        let mut context = self.cached.clone();
        context.push(id);
        let (n, predicted) =
            speculation.next_draft(prediction.as_deref(), &context, reply_start, rows);
        let start = Instant::now();
        let draft = match n {
            0 => Draft::default(),
            n => {
                let from = (&context[..], &predicted[..]);
                self.draft(from, n, sampler, speculation).await?
            }
        };
        let drafting = start.elapsed().as_secs_f64() - draft.catching_up;
        if draft.tokens.is_empty() {
            let start = Instant::now();
            let picked = self.step(&[id], sampler).await?;
            speculation.record_step(start.elapsed().as_secs_f64());
            return Ok(vec![picked]);
        }
        let start = Instant::now();
        let (rows, histories, wants) = draft.check_rows(sampler, &self.cached, id);
        let steps = self.engine.check(&rows, &wants).await?;
        let tokenizer = &self.tokenizer;
        let mut limits = DraftLimits {
            n_vocab: self.engine.n_vocab(),
            ends: &|token| tokenizer.is_end_of_generation(token),
            mask_time: &mut self.engine.stats.totals.mask,
        };
        let Picked { tokens, stood } = draft.judge(sampler, &steps, &histories, &mut limits)?;
        // The cache keeps the rows whose successors were picked: the token run last, and the
        // drafted tokens that stood (the last token picked runs in the next step).
        self.engine.keep_checked(tokens.len()).await?;
        // A recurrent state runs the kept tokens again, reading nothing back: a cost of the check.
        self.engine.gpu.finished().await?;
        self.cached.extend_from_slice(&rows[..tokens.len()]);
        let checking = start.elapsed().as_secs_f64();
        let proposed = draft.tokens.len();
        match prediction.filter(|_| draft.predicted) {
            Some(p) => speculation.record_predicted_check(p, (proposed, stood), checking),
            None => speculation.record_check(proposed, stood, drafting, checking),
        }
        Ok(tokens)
    }

    /// Up to `n` tokens to follow `context` (the cache's tokens and the token picked last): the
    /// first of `predicted` (the reply's prediction's), or where it is empty the session's
    /// drafter's, each allowed by the grammar where the reply has one (walked past them; the
    /// caller takes it back).
    async fn draft(
        &mut self,
        (context, predicted): (&[u32], &[u32]),
        n: usize,
        sampler: &mut Sampler,
        speculation: &mut Speculation,
    ) -> Result<Draft, Error> {
        let id = *context.last().expect("the token picked last");
        let min_chance = speculation.min_chance;
        let tokenizer = &self.tokenizer;
        let mut limits = DraftLimits {
            n_vocab: self.engine.n_vocab(),
            ends: &|token| tokenizer.is_end_of_generation(token),
            mask_time: &mut self.engine.stats.totals.mask,
        };
        let model = match &mut speculation.drafter {
            Drafter::Model(model) if predicted.is_empty() => model,
            _ => return Draft::without_model(context, n, predicted, sampler, &mut limits),
        };
        let mut draft = Draft::start(sampler, &mut limits)?;
        draft.min_chance = min_chance;
        // The draft model reads the tokens it has: not an image's rows, which only the model's
        // projector made, nor any past its vocabulary. Its positions then run behind the
        // model's, which changes its guesses, never what the model picks.
        if id >= model.engine.n_vocab() {
            return Ok(draft); // a token the draft does not have: nothing to go on
        }
        let read: Vec<u32> = (context.iter().copied())
            .filter(|&t| t < model.engine.n_vocab())
            .collect();
        let start = Instant::now();
        let caught_up = model.catch_up(&read).await?;
        draft.catching_up = start.elapsed().as_secs_f64();
        if !caught_up {
            return Ok(draft);
        }
        let mut seen = self.cached.clone();
        (model.draft(&mut draft, (sampler, &mut limits), &mut seen, id, n)).await?;
        Ok(draft)
    }
}

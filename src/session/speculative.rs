//! A reply's step where the session speculates (`Session::speculation`): a draft of the next few
//! tokens, checked in one run of the model, and the tokens the sampler keeps of it.

use super::Session;
use crate::grammar::Constraint;
use crate::sampler::{Chances, Sampler, TokenLogProb};
use crate::speculate::{self, Drafter, Prediction, Speculation};
use crate::Error;
use web_time::{Duration, Instant};

/// A step's draft: the tokens proposed after the token picked last, the chances the drafter gave
/// each, and the tokens a grammar allows after each row of the check (the picked token's, then
/// each drafted token's; none without a grammar).
#[derive(Default)]
struct Draft {
    tokens: Vec<u32>,
    chances: Vec<Chances>,
    allowed: Vec<Option<Vec<u32>>>,
    /// The draft model's time bringing its cache to the tokens so far (the prompt, the tokens
    /// picked without a draft): not a cost of the drafted tokens.
    catching_up: f64,
    /// Drafted from the reply's prediction, not by the drafter.
    predicted: bool,
}

/// The reply a step belongs to: where in the cache it starts (its prompt's length), and what it is
/// predicted to say, if anything.
pub(super) type ReplyAt<'a> = (usize, Option<&'a mut Prediction>);

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
            return Ok(vec![self.step(&[id], sampler).await?]);
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
        (reply_start, prediction): ReplyAt<'_>,
    ) -> Result<Vec<(u32, Option<TokenLogProb>)>, Error> {
        let room = (self.engine.n_ctx() - self.engine.pos()) as usize;
        let most = (self.engine.check_tokens() as usize).min(room);
        let mut context = self.cached.clone();
        context.push(id);
        // The prediction's draft where it has one, sized by how its own drafts fared; else the
        // drafter's.
        let predicted = match &prediction {
            Some(p) => p.propose(&context, &context[reply_start.min(context.len())..], most),
            None => Vec::new(),
        };
        let n = match (&prediction, predicted.is_empty()) {
            (Some(p), false) => speculation.size_predicted(p),
            _ => speculation.size(),
        };
        let n = n.min(most.saturating_sub(1));
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
        let rows: Vec<u32> = [id]
            .into_iter()
            .chain(draft.tokens.iter().copied())
            .collect();
        let base = self.cached.len();
        context.extend_from_slice(&draft.tokens);
        let histories: Vec<Vec<u32>> = (0..rows.len())
            .map(|i| sampler.history(&context[..base + i], rows[i]))
            .collect();
        let wants: Vec<_> = (histories.iter().zip(&draft.allowed))
            .map(|(history, bits)| sampler.want_chances(history, bits.clone()))
            .collect();
        let steps = self.engine.check(&rows, &wants).await?;
        // The grammar walked the draft to mask its rows; it goes back, then takes the tokens kept.
        if let Some(constraint) = &mut sampler.constraint {
            constraint.rollback(draft.tokens.len())?;
        }
        let mut picked = Vec::new();
        let mut stood = 0;
        for (i, step) in steps.iter().enumerate() {
            let chances = sampler.chances_of(step, &histories[i], draft.allowed[i].as_deref());
            let token = match draft.tokens.get(i) {
                Some(&proposed) => match sampler.judge(&chances, &draft.chances[i], proposed) {
                    None => proposed,
                    Some(other) => other,
                },
                None => sampler.draw(&chances),
            };
            let stands = draft.tokens.get(i) == Some(&token);
            picked.push((token, sampler.log_prob_of(step, token, &histories[i])));
            sampler.accept(token, &mut self.engine.stats.totals.mask)?;
            let ended = self.tokenizer.is_end_of_generation(token)
                || sampler.constraint.as_ref().is_some_and(|c| c.is_finished());
            if !stands || ended {
                break;
            }
            stood += 1;
        }
        // The cache keeps the rows whose successors were picked: the token run last, and the
        // drafted tokens that stood (the last token picked runs in the next step).
        self.engine.keep_checked(picked.len()).await?;
        // A recurrent state runs the kept tokens again, reading nothing back: a cost of the check.
        self.engine.gpu.finished().await?;
        self.cached.extend_from_slice(&rows[..picked.len()]);
        let checking = start.elapsed().as_secs_f64();
        let proposed = draft.tokens.len();
        match prediction.filter(|_| draft.predicted) {
            Some(p) => speculation.record_predicted_check(p, (proposed, stood), checking),
            None => speculation.record_check(proposed, stood, drafting, checking),
        }
        Ok(picked)
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
        let n_vocab = self.engine.n_vocab();
        let mask_time = &mut self.engine.stats.totals.mask;
        let mut draft = Draft::default();
        draft
            .allowed
            .push(allowed_now(sampler, n_vocab, mask_time)?);
        let mut take = |draft: &mut Draft, token: u32, chances: Chances, sampler: &mut Sampler| {
            // The end of the reply is not drafted: the model's own pick after the draft finds it.
            // Nor is an image's token (an id past the vocabulary), which lookup finds in the prompt.
            let bits = draft.allowed.last().expect("a row's mask");
            let refused = bits.as_ref().is_some_and(|b| !Constraint::allows(b, token));
            if refused || token >= n_vocab || self.tokenizer.is_end_of_generation(token) {
                return Ok(false);
            }
            sampler.accept(token, mask_time)?;
            draft.tokens.push(token);
            draft.chances.push(chances);
            draft
                .allowed
                .push(allowed_now(sampler, n_vocab, mask_time)?);
            Ok::<_, Error>(true)
        };
        if !predicted.is_empty() {
            draft.predicted = true;
            for &token in predicted.iter().take(n) {
                if !take(&mut draft, token, vec![(token, 1.0)], sampler)? {
                    break;
                }
            }
            return Ok(draft);
        }
        match &mut speculation.drafter {
            Drafter::Lookup => {
                for token in speculate::lookup(context, n) {
                    if !take(&mut draft, token, vec![(token, 1.0)], sampler)? {
                        break;
                    }
                }
            }
            Drafter::Model(model) => {
                // The draft reads the tokens it has: not an image's rows, which only the model's
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
                let words = model.engine.n_vocab().div_ceil(32) as usize;
                let mut seen = self.cached.clone();
                let mut token = id;
                for _ in 0..n.min(model.room()) {
                    let bits = draft.allowed.last().expect("a row's mask");
                    let bits = bits.as_ref().map(|b| b[..words.min(b.len())].to_vec());
                    let history = sampler.history(&seen, token);
                    seen.push(token);
                    let want = sampler.want_chances(&history, bits.clone());
                    let step = model.step(token, &want).await?;
                    let chances = sampler.chances_of(&step, &history, bits.as_deref());
                    let next = sampler.draw(&chances);
                    if !take(&mut draft, next, chances, sampler)? {
                        break;
                    }
                    token = next;
                }
            }
        }
        Ok(draft)
    }
}

/// The tokens the reply's grammar allows next (`Constraint::allowed_bits`), none without one; the
/// grammar's work is added to `mask_time`.
fn allowed_now(
    sampler: &mut Sampler,
    n_vocab: u32,
    mask_time: &mut Duration,
) -> Result<Option<Vec<u32>>, Error> {
    let Some(constraint) = &mut sampler.constraint else {
        return Ok(None);
    };
    let start = Instant::now();
    let bits = constraint.allowed_bits(n_vocab)?;
    *mask_time += start.elapsed();
    Ok(Some(bits))
}

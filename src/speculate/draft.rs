//! A step's draft and its check, as a session and a server's parallel slots share them: the tokens
//! proposed after the token picked last, walked through the reply's grammar to mask each row of the
//! check (`Draft::take`), what each row of the check asks of the step (`Draft::check_rows`), and the
//! tokens the sampler keeps of what the check read back (`Draft::judge`).

use crate::grammar::Constraint;
use crate::sampler::{Chances, Ranked, Sampler, SequenceStep, TokenLogProb, Want};
use crate::Error;
use web_time::{Duration, Instant};

/// The tokens proposed after the token picked last, the chances the drafter gave each, and the
/// tokens a grammar allows after each row of the check (the picked token's, then each drafted
/// token's; none without a grammar).
#[derive(Default)]
pub struct Draft {
    pub tokens: Vec<u32>,
    pub chances: Vec<Chances>,
    pub allowed: Vec<Option<Vec<u32>>>,
    /// A draft model's time bringing its cache to the tokens so far (the prompt, the tokens
    /// picked without a draft): not a cost of the drafted tokens.
    pub catching_up: f64,
    /// Drafted from the reply's prediction, not by the drafter.
    pub predicted: bool,
    /// The least chance a draft model may give a token and draft on after it
    /// (`Speculation::min_chance`; 0, the default, drafts on whatever the chance).
    pub min_chance: f32,
}

/// The tokens picked after a check (or a plain step: one token), each with its log-probability
/// where the sampler reports them, and how many of them were drafted tokens that stood.
pub struct Picked {
    pub tokens: Vec<(u32, Option<TokenLogProb>)>,
    pub stood: usize,
}

/// What a draft model's step is asked for the row after a token (`Draft::ask`): the tokens the
/// penalties look at, the grammar's mask over the draft's vocabulary, and what to read back.
pub struct Asked {
    history: Vec<u32>,
    bits: Option<Vec<u32>>,
    pub want: Want,
}

/// What a reply's sampler and vocabulary say of a drafted token: the model's vocabulary, which
/// tokens end the reply, and where the grammar's work is counted.
pub struct DraftLimits<'a> {
    pub n_vocab: u32,
    pub ends: &'a dyn Fn(u32) -> bool,
    pub mask_time: &'a mut Duration,
}

impl Draft {
    /// An empty draft after the token picked last: the grammar's mask for the check's first row.
    pub fn start(sampler: &mut Sampler, limits: &mut DraftLimits) -> Result<Draft, Error> {
        Ok(Draft {
            allowed: vec![allowed_now(sampler, limits)?],
            ..Draft::default()
        })
    }

    /// A draft of up to `n` tokens after `context` (the tokens so far) that needs no model: those
    /// of `predicted` (the reply's prediction's) where it has any, else lookup's.
    pub fn without_model(
        context: &[u32],
        n: usize,
        predicted: &[u32],
        sampler: &mut Sampler,
        limits: &mut DraftLimits,
    ) -> Result<Draft, Error> {
        let mut draft = Draft::start(sampler, limits)?;
        draft.predicted = !predicted.is_empty();
        let proposed = match draft.predicted {
            true => predicted[..n.min(predicted.len())].to_vec(),
            false => super::lookup(context, n),
        };
        draft.take_all(&proposed, sampler, limits)?;
        Ok(draft)
    }

    /// Takes `token`, proposed with `chances`, where the grammar allows it after the tokens taken
    /// so far (the grammar then walks past it; `judge` takes it back). The end of the reply is not
    /// drafted: the model's own pick after the draft finds it. Nor is an image's token (an id past
    /// the vocabulary), which lookup finds in the prompt. Returns whether it was taken.
    pub fn take(
        &mut self,
        token: u32,
        chances: Chances,
        sampler: &mut Sampler,
        limits: &mut DraftLimits,
    ) -> Result<bool, Error> {
        let bits = self.allowed.last().expect("a row's mask");
        let refused = bits.as_ref().is_some_and(|b| !Constraint::allows(b, token));
        if refused || token >= limits.n_vocab || (limits.ends)(token) {
            return Ok(false);
        }
        sampler.accept(token, limits.mask_time)?;
        self.tokens.push(token);
        self.chances.push(chances);
        self.allowed.push(allowed_now(sampler, limits)?);
        Ok(true)
    }

    /// What a draft model whose rows hold `n_logits` tokens' logits is asked after `token`, which
    /// follows `seen` (the tokens so far, to which it is added): its chances for the next token,
    /// under the grammar's mask for the draft's next row.
    pub fn ask(&self, sampler: &Sampler, seen: &mut Vec<u32>, token: u32, n_logits: u32) -> Asked {
        let words = n_logits.div_ceil(32) as usize;
        let bits = self.allowed.last().expect("a row's mask");
        // The model's mask over the draft's vocabulary (which may be the shorter).
        let bits = bits.as_ref().map(|b| b[..words.min(b.len())].to_vec());
        let history = sampler.history(seen, token);
        seen.push(token);
        let want = sampler.want_chances(&history, bits.clone());
        Asked {
            history,
            bits,
            want,
        }
    }

    /// Draws the next token from the draft model's `step` (asked as `asked` says) and takes it
    /// (`take`): the token to draft on from, or None where the draft stops. It stops after a token
    /// the draft gave less than `min_chance`: that token is checked (it may well stand, and
    /// its row costs little), but the tokens after an unsure one fall more often than not, and each
    /// costs a draft step and a row.
    pub fn take_drawn(
        &mut self,
        asked: &Asked,
        step: &SequenceStep,
        sampler: &mut Sampler,
        limits: &mut DraftLimits,
    ) -> Result<Option<u32>, Error> {
        let chances = sampler.chances_of(step, &asked.history, asked.bits.as_deref());
        let token = sampler.draw(&chances);
        let chance = draft_chance(step, &chances, token);
        let taken = self.take(token, chances, sampler, limits)?;
        // A chance that is NaN (a row of NaN) is not sure either.
        let sure = chance >= self.min_chance;
        Ok((taken && sure).then_some(token))
    }

    /// Takes the tokens of `proposed` in order (each certain, as a lookup's or a prediction's),
    /// up to the first refused.
    pub fn take_all(
        &mut self,
        proposed: &[u32],
        sampler: &mut Sampler,
        limits: &mut DraftLimits,
    ) -> Result<(), Error> {
        for &token in proposed {
            if !self.take(token, vec![(token, 1.0)], sampler, limits)? {
                break;
            }
        }
        Ok(())
    }

    /// The check's rows after `cached` (the tokens before the token picked last, `id`): `id` and
    /// the drafted tokens; for each, the tokens the penalties look at and what the step reads back.
    pub fn check_rows(
        &self,
        sampler: &Sampler,
        cached: &[u32],
        id: u32,
    ) -> (Vec<u32>, Vec<Vec<u32>>, Vec<Want>) {
        let rows: Vec<u32> = [id]
            .into_iter()
            .chain(self.tokens.iter().copied())
            .collect();
        let context: Vec<u32> = [cached, &rows].concat();
        let histories: Vec<Vec<u32>> = (0..rows.len())
            .map(|i| sampler.history(&context[..cached.len() + i], rows[i]))
            .collect();
        let wants = (histories.iter().zip(&self.allowed))
            .map(|(history, bits)| sampler.want_chances(history, bits.clone()))
            .collect();
        (rows, histories, wants)
    }

    /// The tokens the sampler picks from a check's rows (`steps`, with the `histories` of
    /// `check_rows`): each drafted token that stands, up to the first that falls, and the one
    /// picked after it (the model's own, or drawn from what the model gives beyond the draft).
    /// The grammar, which walked the draft to mask its rows, goes back and takes the tokens picked.
    pub fn judge(
        &self,
        sampler: &mut Sampler,
        steps: &[SequenceStep],
        histories: &[Vec<u32>],
        limits: &mut DraftLimits,
    ) -> Result<Picked, Error> {
        if let Some(constraint) = &mut sampler.constraint {
            constraint.rollback(self.tokens.len())?;
        }
        let mut tokens = Vec::new();
        let mut stood = 0;
        for (i, step) in steps.iter().enumerate() {
            let chances = sampler.chances_of(step, &histories[i], self.allowed[i].as_deref());
            let token = match self.tokens.get(i) {
                Some(&proposed) => sampler
                    .judge(&chances, &self.chances[i], proposed)
                    .unwrap_or(proposed),
                None => sampler.draw(&chances),
            };
            let stands = self.tokens.get(i) == Some(&token);
            tokens.push((token, sampler.log_prob_of(step, token, &histories[i])));
            sampler.accept(token, limits.mask_time)?;
            let ended = (limits.ends)(token)
                || sampler.constraint.as_ref().is_some_and(|c| c.is_finished());
            if !stands || ended {
                break;
            }
            stood += 1;
        }
        Ok(Picked { tokens, stood })
    }
}

/// The chance a draft model's `step` gave `token`, drawn from `chances`: its softmax there where
/// the step read it back (the greedy choice's chance, candidates with their row's log-sum-exp),
/// else its chance among the candidates drawn from; 1 for a choice the GPU drew.
fn draft_chance(step: &SequenceStep, chances: &Chances, token: u32) -> f32 {
    let find = |c: &[(u32, f32)]| c.iter().find(|&&(id, _)| id == token).map(|&(_, v)| v);
    match step {
        SequenceStep::Choice { chance, .. } => chance.unwrap_or(1.0),
        SequenceStep::Candidates(Ranked {
            candidates,
            log_sum_exp: Some(sum),
        }) => find(candidates).map_or(0.0, |logit| (logit - sum).exp()),
        _ => find(chances).unwrap_or(0.0),
    }
}

/// The tokens the reply's grammar allows next (`Constraint::allowed_bits`), none without one; the
/// grammar's work is added to the limits' `mask_time`.
fn allowed_now(sampler: &mut Sampler, limits: &mut DraftLimits) -> Result<Option<Vec<u32>>, Error> {
    let Some(constraint) = &mut sampler.constraint else {
        return Ok(None);
    };
    let start = Instant::now();
    let bits = constraint.allowed_bits(limits.n_vocab)?;
    *limits.mask_time += start.elapsed();
    Ok(Some(bits))
}

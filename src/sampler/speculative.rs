//! The sampler's part in speculative decoding: what each row of a check reads back, the chances the
//! sampler gives each token there, and the rule that keeps a drafted token or draws another so that
//! the tokens kept follow the model's own distribution exactly (Leviathan et al. 2023, Chen et al.
//! 2023): a token the draft proposed with chance q(x) stands with chance min(1, p(x) / q(x)); where
//! it falls, the token is drawn from what p has beyond q, max(0, p - q) normalized. Greedy, p gives
//! its largest logit all the chance, so a draft stands exactly where it is that token.

use super::logits::{argmax, penalize, ranked};
use super::{Needs, Pick, Sampler, SequenceStep, TokenLogProb, Want};

/// Chances as (token, probability), the tokens the sampler may draw with what each gets.
pub type Chances = Vec<(u32, f32)>;

impl Sampler {
    /// What a row of a check (or a draft model's step) reads back for this sampler to know its
    /// chances after `history` (`chances_of`): the largest logit's index where greedy, the top k
    /// candidates after the penalties, or the row. `bits` are the tokens a grammar allows there:
    /// masked on the GPU, or on the CPU where the row itself comes back.
    pub fn want_chances(&self, history: &[u32], bits: Option<Vec<u32>>) -> Want {
        let c = &self.config;
        let report = self.log_probs;
        let want = match (self.needs(), report) {
            (_, Some(_)) if bits.is_some() => Want::Logits,
            (Needs::Largest, None) => Want::Choice,
            (Needs::Largest, Some(n)) | (Needs::Candidates(_), Some(n)) => {
                let own = self.own_candidates();
                let k = own.max(n as u32);
                Want::Candidates {
                    pick: Box::new(Pick::new(k, c.penalties(), &self.penalized(history))),
                    log_sum_exp: true,
                }
            }
            (Needs::Candidates(own), None) => Want::Candidates {
                pick: Box::new(Pick::new(own, c.penalties(), &self.penalized(history))),
                log_sum_exp: false,
            },
            (Needs::Drawn | Needs::Logits, _) => Want::Logits,
        };
        match (bits, &want) {
            (Some(bits), Want::Choice | Want::Candidates { .. }) => Want::Allowed {
                bits,
                then: Box::new(want),
            },
            _ => want,
        }
    }

    /// The candidates this sampler draws among, where it reads them from the GPU.
    fn own_candidates(&self) -> u32 {
        match self.needs() {
            Needs::Candidates(own) => own,
            _ => 1,
        }
    }

    /// The chances this sampler gives each token after `history`, from what a row read back as
    /// `want_chances` asked (with the same `bits`).
    pub fn chances_of(
        &self,
        step: &SequenceStep,
        history: &[u32],
        bits: Option<&[u32]>,
    ) -> Chances {
        match step {
            SequenceStep::Choice { id, .. } => vec![(*id, 1.0)],
            SequenceStep::Candidates(ranked) => {
                let own = (self.own_candidates() as usize).min(ranked.candidates.len());
                self.chances(ranked.candidates[..own].to_vec())
            }
            SequenceStep::Logits(logits) => {
                let mut row = logits.clone();
                if let Some(bits) = bits {
                    for (id, logit) in row.iter_mut().enumerate() {
                        if bits[id / 32] >> (id % 32) & 1 == 0 {
                            *logit = f32::NEG_INFINITY;
                        }
                    }
                }
                let c = &self.config;
                penalize(&mut row, &self.penalized(history), c.penalties());
                if c.temperature <= 0.0 {
                    return vec![(argmax(&row), 1.0)];
                }
                let mut cand = ranked(&row);
                if c.top_k > 0 {
                    cand.truncate(c.top_k);
                }
                self.chances(cand)
            }
        }
    }

    /// `token`'s log-probability in a row read back as `want_chances` asked, where the sampler
    /// reports them: the model's, after the penalties and before the grammar and the cuts.
    pub fn log_prob_of(
        &self,
        step: &SequenceStep,
        token: u32,
        history: &[u32],
    ) -> Option<TokenLogProb> {
        let n = self.log_probs?;
        match step {
            SequenceStep::Candidates(ranked) => {
                let sum = ranked.log_sum_exp?;
                Some(TokenLogProb::of_candidates(
                    token,
                    &ranked.candidates,
                    sum,
                    n,
                ))
            }
            SequenceStep::Logits(logits) => {
                let mut row = logits.clone();
                penalize(&mut row, &self.penalized(history), self.config.penalties());
                Some(TokenLogProb::of_logits(token, &row, n))
            }
            SequenceStep::Choice { .. } => None,
        }
    }

    /// Judges a drafted token against the model: None where `draft` (proposed with chances `q`)
    /// stands under the model's chances `p`, else the token drawn in its place from the residual.
    /// Kept tokens and replacements together follow `p` exactly, whatever `q` was.
    pub fn judge(&mut self, p: &[(u32, f32)], q: &[(u32, f32)], draft: u32) -> Option<u32> {
        let chance =
            |d: &[(u32, f32)], t: u32| d.iter().find(|&&(id, _)| id == t).map_or(0.0, |&(_, c)| c);
        let (pd, qd) = (chance(p, draft), chance(q, draft));
        // Greedy (p all on one token) needs no draw: the draft stands where it is that token.
        let stands = match p.len() {
            1 => pd >= 1.0,
            _ => qd > 0.0 && self.uniform() * qd < pd,
        };
        if stands {
            return None;
        }
        Some(self.draw(&residual(p, q)))
    }
}

/// max(0, p - q), normalized: what the model's chances have beyond the draft's. Where nothing is
/// left (p and q equal, which a fallen draft rules out but rounding may not), p itself.
pub fn residual(p: &[(u32, f32)], q: &[(u32, f32)]) -> Chances {
    let left: Chances = p
        .iter()
        .map(|&(id, pc)| {
            let qc = q.iter().find(|&&(t, _)| t == id).map_or(0.0, |&(_, c)| c);
            (id, (pc - qc).max(0.0))
        })
        .filter(|&(_, c)| c > 0.0)
        .collect();
    let sum: f32 = left.iter().map(|&(_, c)| c).sum();
    match sum > 0.0 {
        true => left.into_iter().map(|(id, c)| (id, c / sum)).collect(),
        false => p.to_vec(),
    }
}

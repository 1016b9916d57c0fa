//! Choosing the next token from logits: greedy, or temperature with top-k, top-p and min-p, a bias
//! on chosen tokens, the repetition, presence and frequency penalties and a seeded generator, in
//! llama.cpp's order (bias, penalties, top-k, top-p, min-p, temperature).
//! The first steps, up to top-k, usually run on the GPU after the decode step (`Needs`): then only the
//! k candidates come back, and the rest runs here on them.

use crate::grammar::Constraint;
use web_time::{Duration, Instant};

mod asks;
pub mod logits;
mod speculative;
mod want;
pub use asks::{Choose, Draw, Pick, K_MAX, PENALIZED_MAX};
pub use logits::{argmax, penalize, ranked, softmax, Adjusted, Penalties};
pub use speculative::{residual, Chances};
pub use want::{Ranked, SequenceStep, Want};

/// Sampling settings; `temperature <= 0` means greedy.
#[derive(Clone, Debug)]
pub struct SamplerConfig {
    pub temperature: f32,
    pub top_k: usize,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    /// Subtracted from the logit of each token among the last `repeat_last_n` (OpenAI's
    /// presence_penalty).
    pub presence_penalty: f32,
    /// Subtracted from the logit of each token among the last `repeat_last_n` once for each time it
    /// is there (OpenAI's frequency_penalty).
    pub frequency_penalty: f32,
    /// How many of the last tokens the penalties look at.
    pub repeat_last_n: usize,
    pub seed: u64,
    /// Added to the logits of these tokens (distinct ids) before the penalties: OpenAI's
    /// `logit_bias`, where -100 all but bans a token and 100 all but forces it.
    pub logit_bias: Vec<(u32, f32)>,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            temperature: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            repeat_last_n: 64,
            seed: 0,
            logit_bias: Vec::new(),
        }
    }
}

impl SamplerConfig {
    pub fn greedy() -> SamplerConfig {
        SamplerConfig {
            temperature: 0.0,
            ..Default::default()
        }
    }

    /// Refuses a `logit_bias` that names a token past a vocabulary of `n_vocab`, saying which.
    pub fn check_logit_bias(&self, n_vocab: u32) -> Result<(), String> {
        match self.logit_bias.iter().find(|&&(token, _)| token >= n_vocab) {
            Some((token, _)) => Err(format!(
                "logit_bias names token {token}; the model's are 0 to {}",
                n_vocab - 1
            )),
            None => Ok(()),
        }
    }

    pub fn penalties(&self) -> Penalties {
        Penalties {
            repeat: self.repeat_penalty,
            presence: self.presence_penalty,
            frequency: self.frequency_penalty,
        }
    }
}

pub struct Sampler {
    pub config: SamplerConfig,
    /// A grammar the reply must match: it masks the logits before every other step.
    pub constraint: Option<Constraint>,
    /// Report each token's log-probability and this many of the likeliest at its step (OpenAI's
    /// `logprobs` and `top_logprobs`, at most `MAX_TOP_LOG_PROBS`); None: report none.
    pub log_probs: Option<usize>,
    rng: u64,
}

/// The most alternatives a step reports with its token's log-probability (OpenAI's limit).
pub const MAX_TOP_LOG_PROBS: usize = 20;

/// A generated token's log-probability and the likeliest tokens at its step, largest first: of the
/// model's distribution after the penalties (the logits' own where there is none), before a
/// grammar's mask and the sampler's temperature and cuts.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenLogProb {
    pub token: u32,
    pub log_prob: f32,
    pub top: Vec<(u32, f32)>,
}

impl TokenLogProb {
    /// From a step's candidates (id, penalized logit; largest first, `token` among them) and the
    /// penalized row's log-sum-exp.
    pub fn of_candidates(
        token: u32,
        candidates: &[(u32, f32)],
        log_sum_exp: f32,
        n: usize,
    ) -> TokenLogProb {
        let logit = candidates
            .iter()
            .find(|&&(id, _)| id == token)
            .map_or(f32::NEG_INFINITY, |&(_, l)| l);
        TokenLogProb {
            token,
            log_prob: logit - log_sum_exp,
            top: candidates
                .iter()
                .take(n)
                .map(|&(id, l)| (id, l - log_sum_exp))
                .collect(),
        }
    }

    /// From the whole penalized row of logits.
    pub fn of_logits(token: u32, penalized: &[f32], n: usize) -> TokenLogProb {
        let finite = || {
            penalized
                .iter()
                .filter(|l| l.is_finite())
                .map(|&l| l as f64)
        };
        let top = finite().fold(f64::MIN, f64::max);
        let log_sum_exp = (top + finite().map(|l| (l - top).exp()).sum::<f64>().ln()) as f32;
        let mut top = ranked(penalized);
        top.truncate(n);
        let logit = penalized
            .get(token as usize)
            .copied()
            .unwrap_or(f32::NEG_INFINITY);
        TokenLogProb {
            token,
            log_prob: logit - log_sum_exp,
            top: top.iter().map(|&(id, l)| (id, l - log_sum_exp)).collect(),
        }
    }
}

impl Sampler {
    pub fn new(config: SamplerConfig) -> Sampler {
        // splitmix64 of the seed, so seeds 0 and 1 start far apart.
        let rng = config.seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        Sampler {
            config,
            constraint: None,
            log_probs: None,
            rng,
        }
    }

    /// Whether the GPU makes each choice alone, from a step's logits and nothing before them:
    /// greedy, or drawn or chosen on the GPU, with no grammar, penalty, bias or log-probabilities.
    /// A reply's steps may then run ahead of what the CPU reads back (`Engine::submit_step`).
    pub fn chooses_on_gpu(&self) -> bool {
        let c = &self.config;
        let alone = self.constraint.is_none() && self.log_probs.is_none();
        let unpenalized = !c.penalties().any() && c.logit_bias.is_empty();
        let on_gpu = matches!(
            self.needs(),
            Needs::Largest | Needs::Drawn | Needs::Candidates(_)
        );
        alone && unpenalized && on_gpu
    }

    /// Where its seeded generator stands, to go back to (`set_draws`): a step submitted ahead and
    /// dropped gives back its draw.
    pub fn draws(&self) -> u64 {
        self.rng
    }

    pub fn set_draws(&mut self, draws: u64) {
        self.rng = draws;
    }

    /// The seeded generator's next number (xorshift64*).
    fn next_u64(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A uniform number in [0, 1).
    fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// What a decode step must work out for this sampler: the largest logit's index (greedy), the
    /// top k candidates after the penalty (for k up to `K_MAX`), a token drawn from the
    /// whole row (no top-k), all on the GPU; or the whole row of logits (a top-k above K_MAX, a
    /// penalty over more recent tokens than the GPU takes), sampled here.
    pub fn needs(&self) -> Needs {
        let c = &self.config;
        let penalized = c.penalties().any() || !c.logit_bias.is_empty();
        let seen = match c.penalties().any() {
            true => c.repeat_last_n,
            false => 0,
        };
        if penalized && seen + c.logit_bias.len() > PENALIZED_MAX {
            return Needs::Logits;
        }
        if c.temperature <= 0.0 {
            return match penalized {
                true => Needs::Candidates(1),
                false => Needs::Largest,
            };
        }
        match c.top_k {
            0 => Needs::Drawn,
            k if k <= K_MAX as usize => Needs::Candidates(k as u32),
            _ => Needs::Logits,
        }
    }

    /// The tokens the penalties look at when `token` runs after `cached`: the last ones cached, and
    /// this one.
    pub fn history(&self, cached: &[u32], token: u32) -> Vec<u32> {
        let from = cached.len().saturating_sub(self.config.repeat_last_n);
        [&cached[from..], &[token]].concat()
    }

    /// What a step must read back for this sampler to pick the token after `history` (the tokens the
    /// penalties look at) and report its log-probability where asked for: the token,
    /// chosen on the GPU (greedy; among the candidates as `choose` would, with this step's number
    /// from the seeded generator; or drawn from the row, keyed by it); the candidates with the
    /// row's log-sum-exp where log-probabilities are reported; or the whole row. With a grammar, all
    /// but the row among the `n_vocab` tokens it allows (its work added to `mask_time`); where
    /// log-probabilities are reported, the row, whose alternatives the grammar does not cut.
    pub fn want(
        &mut self,
        history: &[u32],
        n_vocab: u32,
        mask_time: &mut Duration,
    ) -> Result<Want, crate::Error> {
        let mut want = match (&self.constraint, self.log_probs) {
            (Some(_), Some(_)) => return Ok(Want::Logits),
            _ => self.want_unmasked(history),
        };
        // A sampled step takes one number from the seeded generator, as `choose` would.
        match &mut want {
            Want::Drawn { draw, .. } => draw.key = (self.next_u64() >> 32) as u32,
            Want::Chosen { choose, .. } if choose.temperature > 0.0 => choose.r = self.uniform(),
            _ => {}
        }
        let Some(constraint) = self
            .constraint
            .as_mut()
            .filter(|_| !matches!(want, Want::Logits))
        else {
            return Ok(want);
        };
        let start = Instant::now();
        let bits = constraint.allowed_bits(n_vocab)?;
        *mask_time += start.elapsed();
        Ok(Want::Allowed {
            bits,
            then: Box::new(want),
        })
    }

    fn want_unmasked(&self, history: &[u32]) -> Want {
        let report = self.log_probs;
        let needs = match (self.needs(), report) {
            (Needs::Largest, Some(_)) => Needs::Candidates(1),
            (Needs::Drawn, Some(_)) => Needs::Logits,
            (needs, _) => needs,
        };
        match needs {
            Needs::Largest => Want::Choice,
            Needs::Candidates(own) if report.is_none() => {
                let c = &self.config;
                Want::Chosen {
                    pick: Box::new(Pick::new(own, c.penalties(), &self.penalized(history))),
                    // The draw is the step's number from the seeded generator (`want`).
                    choose: Choose {
                        temperature: c.temperature,
                        top_p: c.top_p,
                        min_p: c.min_p,
                        r: 0.0,
                        k: own,
                    },
                }
            }
            Needs::Candidates(own) => {
                // The sampler draws from its own k; the alternatives reported may be more.
                let k = own.max(report.unwrap_or(0) as u32);
                let penalized = self.penalized(history);
                Want::Candidates {
                    pick: Box::new(Pick::new(k, self.config.penalties(), &penalized)),
                    log_sum_exp: report.is_some(),
                }
            }
            Needs::Drawn => {
                let c = &self.config;
                Want::Drawn {
                    pick: Box::new(Pick::new(0, c.penalties(), &self.penalized(history))),
                    // The key is the step's draw from the seeded generator (`want`).
                    draw: Draw::new(c.temperature, c.top_p, c.min_p, 0),
                }
            }
            Needs::Logits => Want::Logits,
        }
    }

    /// Picks the token after `history` from what a step read back as `want` asked, with its
    /// log-probability where reported; the grammar's work is added to `mask_time`.
    pub fn pick_from_step(
        &mut self,
        step: SequenceStep,
        history: &[u32],
        mask_time: &mut Duration,
    ) -> Result<(u32, Option<TokenLogProb>), crate::Error> {
        match step {
            SequenceStep::Choice { id, .. } => Ok((id, None)),
            SequenceStep::Candidates(ranked) => {
                let own = match self.needs() {
                    Needs::Candidates(own) => own as usize,
                    _ => 1,
                };
                let candidates = &ranked.candidates;
                let next = self.pick_from(&candidates[..candidates.len().min(own)]);
                let log_prob = (self.log_probs.zip(ranked.log_sum_exp))
                    .map(|(n, sum)| TokenLogProb::of_candidates(next, candidates, sum, n));
                Ok((next, log_prob))
            }
            SequenceStep::Logits(mut logits) => {
                self.pick_from_logits(&mut logits, history, mask_time)
            }
        }
    }

    /// The tokens whose logits the bias and the penalties change (`penalize`): those biased, then
    /// where there are penalties, those among the last `repeat_last_n` of `history` in order of
    /// first appearance, each once with how often it is there.
    pub fn penalized(&self, history: &[u32]) -> Vec<Adjusted> {
        let c = &self.config;
        let mut adjusted: Vec<Adjusted> = (c.logit_bias.iter())
            .map(|&(token, bias)| Adjusted {
                token,
                seen: 0,
                bias,
            })
            .collect();
        if !c.penalties().any() {
            return adjusted;
        }
        let start = history.len().saturating_sub(c.repeat_last_n);
        let mut at: std::collections::HashMap<u32, usize> = (adjusted.iter().enumerate())
            .map(|(i, t)| (t.token, i))
            .collect();
        for &t in &history[start..] {
            let i = *at.entry(t).or_insert_with(|| {
                adjusted.push(Adjusted::seen(t, 0));
                adjusted.len() - 1
            });
            adjusted[i].seen += 1;
        }
        adjusted
    }

    /// Picks a token from all the logits. `history` holds the tokens so far, for the penalties.
    pub fn sample(&mut self, logits: &[f32], history: &[u32]) -> u32 {
        let mut logits = logits.to_vec();
        penalize(
            &mut logits,
            &self.penalized(history),
            self.config.penalties(),
        );
        if self.config.temperature <= 0.0 {
            return argmax(&logits);
        }
        let mut cand = ranked(&logits);
        if self.config.top_k > 0 {
            cand.truncate(self.config.top_k);
        }
        self.choose(cand)
    }

    /// Picks a token from a step's whole row of logits (`Needs::Logits`, or wherever the row was read
    /// back), the grammar's mask applied first, and the token's log-probability where reported.
    /// `history` holds the tokens so far, for the penalties; the grammar's work is added to
    /// `mask_time`.
    pub fn pick_from_logits(
        &mut self,
        logits: &mut [f32],
        history: &[u32],
        mask_time: &mut Duration,
    ) -> Result<(u32, Option<TokenLogProb>), crate::Error> {
        let penalized = self.log_probs.map(|_| {
            let mut row = logits.to_vec();
            penalize(&mut row, &self.penalized(history), self.config.penalties());
            row
        });
        if let Some(constraint) = &mut self.constraint {
            let start = Instant::now();
            constraint.mask(logits)?;
            *mask_time += start.elapsed();
        }
        let next = self.sample(logits, history);
        let log_prob = self
            .log_probs
            .zip(penalized)
            .map(|(n, row)| TokenLogProb::of_logits(next, &row, n));
        Ok((next, log_prob))
    }

    /// Moves the grammar past the token picked; its work is added to `mask_time`.
    pub fn accept(&mut self, token: u32, mask_time: &mut Duration) -> Result<(), crate::Error> {
        if let Some(constraint) = &mut self.constraint {
            let start = Instant::now();
            constraint.accept(token)?;
            *mask_time += start.elapsed();
        }
        Ok(())
    }

    /// Picks a token from the candidates a step found on the GPU (`Needs::Candidates`): the top k
    /// logits after the penalty, largest first. The same choice `sample` makes from all the logits.
    pub fn pick_from(&mut self, candidates: &[(u32, f32)]) -> u32 {
        match self.config.temperature <= 0.0 {
            true => candidates.first().map_or(0, |&(id, _)| id),
            false => self.choose(candidates.to_vec()),
        }
    }

    /// Top-p, min-p and temperature over candidates sorted largest first, then a draw.
    fn choose(&mut self, cand: Vec<(u32, f32)>) -> u32 {
        let chances = self.chances(cand);
        self.draw(&chances)
    }

    /// The chances this sampler gives each of the candidates (sorted largest first, as top-k
    /// leaves them): top-p and min-p cut them, then the temperature spreads them; greedy, the first
    /// has them all. (token, probability) pairs that sum to 1, none where there are no candidates.
    pub fn chances(&self, mut cand: Vec<(u32, f32)>) -> Vec<(u32, f32)> {
        let c = &self.config;
        if cand.is_empty() {
            return vec![(0, 1.0)];
        }
        if c.temperature <= 0.0 {
            return vec![(cand[0].0, 1.0)];
        }
        let probs = softmax(&cand, 1.0);
        if c.top_p < 1.0 {
            let mut cum = 0.0;
            let keep = probs.iter().position(|p| {
                cum += p;
                cum >= c.top_p
            });
            cand.truncate(keep.map_or(cand.len(), |i| i + 1));
        }
        if c.min_p > 0.0 {
            let floor = cand[0].1 + c.min_p.ln();
            cand.retain(|&(_, l)| l >= floor);
        }
        let probs = softmax(&cand, c.temperature);
        cand.iter()
            .zip(probs)
            .map(|(&(id, _), p)| (id, p))
            .collect()
    }

    /// A token drawn by the seeded generator from `chances` ((token, probability), summing to 1).
    pub fn draw(&mut self, chances: &[(u32, f32)]) -> u32 {
        let r = self.uniform();
        let mut cum = 0.0;
        for &(id, p) in chances {
            cum += p;
            if r < cum {
                return id;
            }
        }
        chances.last().map_or(0, |&(id, _)| id)
    }
}

/// What a decode step reads back for the sampler (`Sampler::needs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    Largest,
    Candidates(u32),
    /// The token, drawn on the GPU at the temperature within min-p.
    Drawn,
    Logits,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_largest() {
        let mut s = Sampler::new(SamplerConfig::greedy());
        assert_eq!(s.sample(&[0.1, 3.0, -1.0, 2.9], &[]), 1);
    }

    #[test]
    fn penalty_can_change_the_choice() {
        let c = SamplerConfig {
            repeat_penalty: 2.0,
            ..SamplerConfig::greedy()
        };
        assert_eq!(Sampler::new(c).sample(&[0.1, 3.0, -1.0, 2.0], &[1]), 3);
    }

    /// llama.cpp's penalties over the last `repeat_last_n` tokens, worked by hand: a token seen
    /// twice at logit 3.0 becomes 3.0 / 1.5 - 2 * 0.25 - 0.5 = 1.0; seen once at -1.0, -1.0 * 1.5 -
    /// 0.25 - 0.5 = -2.25; a token seen only before the window is left alone.
    #[test]
    fn presence_and_frequency_penalties_count_the_recent_tokens() {
        let c = SamplerConfig {
            repeat_penalty: 1.5,
            presence_penalty: 0.5,
            frequency_penalty: 0.25,
            repeat_last_n: 3,
            ..SamplerConfig::greedy()
        };
        let s = Sampler::new(c.clone());
        let history = [0, 1, 2, 1];
        let seen = Adjusted::seen;
        assert_eq!(s.penalized(&history), vec![seen(1, 2), seen(2, 1)]);
        let mut logits = vec![0.1, 3.0, -1.0, 2.0];
        penalize(&mut logits, &s.penalized(&history), c.penalties());
        assert_eq!(logits, vec![0.1, 1.0, -2.25, 2.0]);
        // Either alone is a penalty: the tokens are counted.
        for (presence, frequency) in [(0.5, 0.0), (0.0, -0.5)] {
            let c = SamplerConfig {
                presence_penalty: presence,
                frequency_penalty: frequency,
                ..SamplerConfig::greedy()
            };
            assert_eq!(Sampler::new(c).penalized(&[4, 4]), vec![seen(4, 2)]);
        }
        let none = Sampler::new(SamplerConfig::greedy());
        assert!(none.penalized(&history).is_empty());
    }

    /// OpenAI's logit_bias, added before the penalties as llama.cpp does, worked by hand on the
    /// test above's logits and history: token 0 (not seen) 0.1 + 1 = 1.1; token 1 (seen twice)
    /// (3.0 + 1.5) / 1.5 - 2 * 0.25 - 0.5 = 2.0; token 2 as above; token 3 (not seen) 2.0 - 5.
    #[test]
    fn a_logit_bias_is_added_before_the_penalties() {
        let c = SamplerConfig {
            repeat_penalty: 1.5,
            presence_penalty: 0.5,
            frequency_penalty: 0.25,
            repeat_last_n: 3,
            logit_bias: vec![(0, 1.0), (1, 1.5), (3, -5.0)],
            ..SamplerConfig::greedy()
        };
        let s = Sampler::new(c.clone());
        let history = [0, 1, 2, 1];
        let adjusted = s.penalized(&history);
        let biased = |token, seen, bias| Adjusted { token, seen, bias };
        let expected = [
            biased(0, 0, 1.0),
            biased(1, 2, 1.5),
            biased(3, 0, -5.0),
            biased(2, 1, 0.0),
        ];
        assert_eq!(adjusted, expected);
        let mut logits = vec![0.1, 3.0, -1.0, 2.0];
        penalize(&mut logits, &adjusted, c.penalties());
        assert_eq!(logits, vec![1.1, 2.0, -2.25, -3.0]);
        // Greedy with a bias reads candidates, whose pick carries it to the GPU.
        assert!(matches!(s.needs(), Needs::Candidates(1)));
        // A bias alone, without penalties, adjusts only the tokens it names.
        let mut only = Sampler::new(SamplerConfig {
            logit_bias: vec![(2, 10.0)],
            ..SamplerConfig::greedy()
        });
        assert_eq!(only.penalized(&history), vec![biased(2, 0, 10.0)]);
        assert_eq!(only.sample(&[0.1, 3.0, -1.0, 2.0], &history), 2);
    }

    #[test]
    fn top_k_one_is_greedy_and_seeds_repeat() {
        let c = SamplerConfig {
            top_k: 1,
            temperature: 1.0,
            ..Default::default()
        };
        assert_eq!(Sampler::new(c).sample(&[0.1, 3.0, -1.0, 2.9], &[]), 1);
        let logits: Vec<f32> = (0..100).map(|i| (i % 7) as f32 * 0.3).collect();
        let c = SamplerConfig {
            temperature: 1.5,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            seed: 42,
            ..Default::default()
        };
        let a: Vec<u32> = {
            let mut s = Sampler::new(c.clone());
            (0..20).map(|_| s.sample(&logits, &[])).collect()
        };
        let b: Vec<u32> = {
            let mut s = Sampler::new(c);
            (0..20).map(|_| s.sample(&logits, &[])).collect()
        };
        assert_eq!(a, b);
        assert!(
            a.iter().any(|&t| t != a[0]),
            "temperature sampling should vary"
        );
    }

    #[test]
    fn sampling_follows_the_distribution() {
        // Two tokens with probabilities 0.75 / 0.25 at temperature 1.
        let logits = [3f32.ln(), 0.0];
        let c = SamplerConfig {
            temperature: 1.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            seed: 7,
            ..Default::default()
        };
        let mut s = Sampler::new(c);
        let n = 20000;
        let zeros = (0..n).filter(|_| s.sample(&logits, &[]) == 0).count();
        let frac = zeros as f32 / n as f32;
        assert!((frac - 0.75).abs() < 0.02, "{frac}");
    }
}

//! Speculative decoding: several tokens a step where a cheap guess at the next few is right. A
//! drafter proposes them (a smaller model with the same vocabulary, or the text so far, where the
//! reply repeats what it has seen), the model checks the token it picked and the draft after it in
//! one pass (`Engine::check`), and the sampler keeps the drafted tokens the model would have chosen
//! and one of the model's own after them (`Sampler::judge`). On a GPU a step's cost is reading the
//! weights, which a check of a few tokens does once for all of them.

mod draft_model;
mod lookup;
pub use draft_model::{same_vocabulary, DraftModel};
pub use lookup::propose as lookup;

/// Where a step's draft comes from.
pub enum Drafter {
    /// The longest earlier match of the last tokens in the prompt and the reply so far, and what
    /// followed it there.
    Lookup,
    /// A smaller model with the same vocabulary, decoding ahead of the model.
    Model(Box<DraftModel>),
}

/// A speculating session's drafter, how many tokens it proposes, and what came of it.
pub struct Speculation {
    pub drafter: Drafter,
    /// The most tokens a step proposes.
    pub max: usize,
    /// Propose `max` every step, whatever it costs (for checks of the mechanism itself).
    always: bool,
    costs: Costs,
    pub stats: SpeculationStats,
}

/// What the checks so far proposed and kept.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpeculationStats {
    /// Checks run (steps with a draft).
    pub checks: u64,
    /// Drafted tokens checked, and of them those kept.
    pub proposed: u64,
    pub accepted: u64,
}

/// What speculation has measured on this adapter (`Speculation::measured`), in seconds.
#[derive(Clone, Debug)]
pub struct Measured {
    /// A plain step.
    pub step: Option<f64>,
    /// A check, by its rows.
    pub checks: Vec<(usize, f64)>,
    /// Drafting a token.
    pub draft: Option<f64>,
    /// The chance a drafted token stands, as estimated now.
    pub stands: f64,
}

impl SpeculationStats {
    /// Tokens each check gave on average: those kept and the model's own after them.
    pub fn tokens_per_check(&self) -> f64 {
        (self.accepted + self.checks) as f64 / self.checks.max(1) as f64
    }
}

/// What steps and checks cost on this adapter, as measured (moving averages, seconds), and how
/// often a drafted token stands: what sizes the next draft. Where a step is bound by reading the
/// weights (a GPU), a check of a few tokens costs about one step and long drafts pay; where it is
/// bound by arithmetic (a CPU-backed adapter), each row costs a good part of a step and only drafts
/// that mostly stand do.
#[derive(Debug)]
struct Costs {
    /// A plain step (one token, no draft).
    step: Option<f64>,
    /// A check of r rows, at index r.
    checks: Vec<Option<f64>>,
    /// Drafting one token (the draft model's step; next to nothing for lookup).
    draft: Option<f64>,
    /// Drafted tokens that stood and checks where one fell, each count decaying so that the
    /// estimate follows the text (a quote of the prompt, then free prose).
    stood: f64,
    fell: f64,
    /// Plain steps since the last check, and how many are taken before a draft is tried again.
    plain_steps: u32,
    retry_after: u32,
}

/// After this many plain steps chosen as the cheaper, a draft is tried again: the text may have
/// turned into something drafts get right. Each try that finds drafting still dearer doubles the
/// wait, up to the most: a try costs a check, and a draft model's catching up on the tokens since.
const RETRY_AFTER: u32 = 16;
const RETRY_AFTER_MOST: u32 = 512;
/// How much of the earlier measurements each new one leaves.
const KEEP: f64 = 0.75;

impl Speculation {
    pub fn new(drafter: Drafter, max: usize) -> Speculation {
        let max = max.max(1);
        Speculation {
            drafter,
            max,
            always: false,
            costs: Costs {
                step: None,
                checks: vec![None; max + 2],
                draft: None,
                stood: 0.0,
                fell: 0.0,
                plain_steps: 0,
                retry_after: RETRY_AFTER,
            },
            stats: SpeculationStats::default(),
        }
    }

    /// A speculation that proposes `max` tokens every step, measured faster or not.
    pub fn always(drafter: Drafter, max: usize) -> Speculation {
        Speculation {
            always: true,
            ..Speculation::new(drafter, max)
        }
    }

    /// How many tokens the next step proposes: the number that gives the most tokens a second by
    /// what has been measured; 0 for a plain step. A plain step is measured first, then a draft of
    /// the most tokens, then each size as it is chosen.
    pub fn size(&mut self) -> usize {
        let c = &self.costs;
        if self.always {
            return self.max;
        }
        let Some(step) = c.step else {
            return 0;
        };
        if c.checks.iter().all(Option::is_none) {
            return self.max;
        }
        let best = (1..=self.max)
            .map(|n| (n, self.tokens_per_second(n, step)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("sizes from 1");
        let c = &mut self.costs;
        if best.1 > 1.0 / step {
            c.retry_after = RETRY_AFTER;
            return best.0;
        }
        c.plain_steps += 1;
        if c.plain_steps <= c.retry_after {
            return 0;
        }
        c.retry_after = (2 * c.retry_after).min(RETRY_AFTER_MOST);
        best.0
    }

    /// What has been measured so far, as the draft sizes are chosen by it.
    pub fn measured(&self) -> Measured {
        let c = &self.costs;
        Measured {
            step: c.step,
            checks: (c.checks.iter().enumerate())
                .filter_map(|(rows, t)| t.map(|t| (rows, t)))
                .collect(),
            draft: c.draft,
            stands: self.stands(),
        }
    }

    /// The chance a drafted token stands, from the decaying counts (none counted: even).
    fn stands(&self) -> f64 {
        let c = &self.costs;
        (c.stood + 1.0) / (c.stood + c.fell + 2.0)
    }

    /// The tokens a second a draft of `n` would give: the tokens it is expected to keep and the
    /// model's own after them, over the time to draft and check them.
    fn tokens_per_second(&self, n: usize, step: f64) -> f64 {
        let c = &self.costs;
        let stands = self.stands();
        let tokens: f64 = (0..=n).map(|i| stands.powi(i as i32)).sum();
        tokens / (self.check_time(n + 1, step) + n as f64 * c.draft.unwrap_or(0.0))
    }

    /// A check of `rows`, as measured, or as the measured checks of other sizes say a row costs.
    fn check_time(&self, rows: usize, step: f64) -> f64 {
        let checks = &self.costs.checks;
        if let Some(t) = checks.get(rows).copied().flatten() {
            return t;
        }
        let per_row: Vec<f64> = (2..checks.len())
            .filter_map(|r| checks[r].map(|t| (t - step).max(0.0) / (r - 1) as f64))
            .collect();
        let per_row = per_row.iter().sum::<f64>() / per_row.len().max(1) as f64;
        step + per_row * (rows - 1) as f64
    }

    /// Counts a plain step and what it took.
    pub fn record_step(&mut self, seconds: f64) {
        average(&mut self.costs.step, seconds);
    }

    /// Counts a check of `proposed` drafted tokens of which the first `accepted` stood, with the
    /// time drafting them took and the time the check took.
    pub fn record_check(&mut self, proposed: usize, accepted: usize, draft: f64, check: f64) {
        self.stats.checks += 1;
        self.stats.proposed += proposed as u64;
        self.stats.accepted += accepted as u64;
        let c = &mut self.costs;
        c.plain_steps = 0;
        c.stood = KEEP * c.stood + accepted as f64;
        c.fell = KEEP * c.fell + (accepted < proposed) as u32 as f64;
        average(&mut c.draft, draft / proposed.max(1) as f64);
        if let Some(t) = c.checks.get_mut(proposed + 1) {
            average(t, check);
        }
    }
}

fn average(average: &mut Option<f64>, t: f64) {
    *average = Some(average.map_or(t, |a| KEEP * a + (1.0 - KEEP) * t));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A speculation that has measured a step of `step` seconds and checks of 4 drafted tokens
    /// costing `per_row` more a row, `accepted` of them standing each time.
    fn measured(step: f64, per_row: f64, accepted: usize) -> Speculation {
        let mut s = Speculation::new(Drafter::Lookup, 6);
        s.record_step(step);
        for _ in 0..20 {
            s.record_check(4, accepted, 0.0, step + 4.0 * per_row);
        }
        s
    }

    #[test]
    fn drafts_are_sized_by_what_they_cost_and_keep() {
        // Nothing measured: a plain step, then the longest draft.
        let mut s = Speculation::new(Drafter::Lookup, 6);
        assert_eq!(s.size(), 0);
        s.record_step(0.01);
        assert_eq!(s.size(), 6);
        // A GPU: a check costs about a step; drafts that stand are drafted long, and even drafts
        // that mostly fall are worth a token or two.
        assert_eq!(measured(0.004, 0.0001, 4).size(), 6);
        assert!(measured(0.004, 0.0001, 1).size() > 0);
        // A CPU-backed adapter: each row costs most of a step; drafts that often fall are not
        // worth it, drafts that stand still are.
        let mut s = measured(0.07, 0.05, 1);
        assert_eq!(s.size(), 0);
        assert!(measured(0.07, 0.05, 4).size() > 0);
        // A plain step now and then gives way to a draft again, less often each time it loses.
        let mut tries = Vec::new();
        for step in 0..8 * RETRY_AFTER {
            if s.size() > 0 {
                tries.push(step);
                s.record_check(4, 1, 0.0, 0.07 + 4.0 * 0.05);
            }
        }
        assert_eq!(tries.len(), 3, "{tries:?}");
        assert!(tries[2] - tries[1] > tries[1] - tries[0], "{tries:?}");
    }
}

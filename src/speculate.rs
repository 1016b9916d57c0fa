//! Speculative decoding: several tokens a step where a cheap guess at the next few is right. A
//! drafter proposes them (a smaller model with the same vocabulary, or the text so far, where the
//! reply repeats what it has seen), the model checks the token it picked and the draft after it in
//! one pass (`Engine::check`), and the sampler keeps the drafted tokens the model would have chosen
//! and one of the model's own after them (`Sampler::judge`). On a GPU a step's cost is reading the
//! weights, which a check of a few tokens does once for all of them.

mod draft;
mod draft_model;
mod lookup;
pub use draft::{Asked, Draft, DraftLimits, Picked};
pub use draft_model::{same_vocabulary, DraftModel, DRAFT_HEAD_ROWS};
pub use lookup::propose as lookup;

/// Where a step's draft comes from, after the reply's `Prediction` where it has one.
pub enum Drafter {
    /// The longest earlier match of the last tokens in the prompt and the reply so far, and what
    /// followed it there.
    Lookup,
    /// A smaller model with the same vocabulary, decoding ahead of the model.
    Model(Box<DraftModel>),
    /// A draft model that a server's parallel slots share (`slots::DraftSlots`), held beside
    /// them: each slot's speculation sizes and counts the drafts it decodes for that slot.
    SharedModel,
}

/// A speculating session's drafter, how many tokens it proposes, and what came of it.
pub struct Speculation {
    pub drafter: Drafter,
    /// The most tokens a step proposes.
    pub max: usize,
    /// The least chance a draft model may give a drafted token and draft on after it
    /// (`Draft::take_drawn`); `DRAFT_MIN_CHANCE` unless set.
    pub min_chance: f32,
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

/// What a reply is expected to say, as tokens (OpenAI's predicted outputs: a file with a few
/// lines to change, a document to correct): where the session speculates, its next tokens are
/// drafted from it first, and the model checks them as any draft. The reply stays the model's own;
/// `accepted` and `rejected` count the predicted tokens the checks kept and those they did not.
#[derive(Clone, Debug)]
pub struct Prediction {
    pub tokens: Vec<u32>,
    pub accepted: usize,
    pub rejected: usize,
    /// How often its drafts stood in this reply. A prediction is given where the reply is expected
    /// to say most of it: its count starts as if its first drafts had stood
    /// (`Standing::PREDICTED`), so that its drafts are sized as likely to stand whatever the
    /// drafter's fared (and tried wherever the checks measured let such drafts pay).
    standing: Standing,
}

impl Prediction {
    pub fn new(tokens: Vec<u32>) -> Prediction {
        Prediction {
            tokens,
            accepted: 0,
            rejected: 0,
            standing: Standing::PREDICTED,
        }
    }

    /// Up to `n` tokens to follow `reply` (the reply so far, the end of `context`): the
    /// prediction's next ones while the reply has said what it predicts; past the first place
    /// they part, what follows the reply's last tokens where they stand in the prediction (the
    /// reply may have changed a line and gone on as predicted).
    pub fn propose(&self, context: &[u32], reply: &[u32], n: usize) -> Vec<u32> {
        if self.tokens.starts_with(reply) && self.tokens.len() > reply.len() {
            let from = reply.len();
            return self.tokens[from..(from + n).min(self.tokens.len())].to_vec();
        }
        lookup::propose_from(&self.tokens, context, n)
    }
}

/// How often drafted tokens have stood: counts that decay, so that the estimate follows the text (a
/// quote of the prompt, then free prose).
#[derive(Clone, Copy, Debug)]
struct Standing {
    stood: f64,
    /// Checks where a drafted token fell.
    fell: f64,
}

impl Standing {
    const UNKNOWN: Standing = Standing {
        stood: 0.0,
        fell: 0.0,
    };
    /// As if 6 drafted tokens had stood: a 7 in 8 chance.
    const PREDICTED: Standing = Standing {
        stood: 6.0,
        fell: 0.0,
    };

    /// The chance a drafted token stands (none counted: even).
    fn chance(&self) -> f64 {
        (self.stood + 1.0) / (self.stood + self.fell + 2.0)
    }

    fn record(&mut self, proposed: usize, accepted: usize) {
        self.stood = KEEP * self.stood + accepted as f64;
        self.fell = KEEP * self.fell + (accepted < proposed) as u32 as f64;
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
    step: Timed,
    /// A check of r rows, at index r.
    checks: Vec<Timed>,
    /// Drafting one token (the draft model's step; next to nothing for lookup).
    draft: Timed,
    /// How often the drafter's tokens stood.
    standing: Standing,
    /// Plain steps since the last check, and how many are taken before a draft is tried again.
    plain_steps: u32,
    retry_after: u32,
}

/// After this many plain steps chosen as the cheaper, a draft is tried again: the text may have
/// turned into something drafts get right. Each try that finds drafting still dearer doubles the
/// wait, up to the most: a try costs a check, and a draft model's catching up on the tokens since.
const RETRY_AFTER: u32 = 16;
/// A draft model stops drafting after a token it gave less than this chance (its softmax there).
/// Its sure tokens mostly stand and its unsure ones fall about as often as not: past an unsure token
/// a draft is mostly steps and rows spent on tokens that fall.
pub const DRAFT_MIN_CHANCE: f32 = 0.75;
const RETRY_AFTER_MOST: u32 = 512;
/// How much of the earlier measurements each new one leaves.
const KEEP: f64 = 0.75;

impl Speculation {
    pub fn new(drafter: Drafter, max: usize) -> Speculation {
        let max = max.max(1);
        Speculation {
            drafter,
            max,
            min_chance: DRAFT_MIN_CHANCE,
            always: false,
            costs: Costs {
                step: Timed::default(),
                checks: vec![Timed::default(); max + 2],
                draft: Timed::default(),
                standing: Standing::UNKNOWN,
                plain_steps: 0,
                retry_after: RETRY_AFTER,
            },
            stats: SpeculationStats::default(),
        }
    }

    /// A speculation that proposes `max` tokens every step, measured faster or not, however
    /// unsure the draft model (`min_chance` 0).
    pub fn always(drafter: Drafter, max: usize) -> Speculation {
        Speculation {
            always: true,
            min_chance: 0.0,
            ..Speculation::new(drafter, max)
        }
    }

    /// What the next step drafts, in a check of at most `rows` rows after `context` (the tokens so
    /// far, the reply's from `reply_start`): where the reply's `prediction` proposes tokens, as many
    /// of them as its own drafts' standing sizes; else none, and how many the drafter is to propose
    /// (`size`). A size of 0: a plain step.
    pub fn next_draft(
        &mut self,
        prediction: Option<&Prediction>,
        context: &[u32],
        reply_start: usize,
        rows: usize,
    ) -> (usize, Vec<u32>) {
        let most = rows.saturating_sub(1);
        let reply = &context[reply_start.min(context.len())..];
        let predicted = prediction.map_or(Vec::new(), |p| p.propose(context, reply, most));
        let n = match (prediction, predicted.is_empty()) {
            (Some(p), false) => self.size_predicted(p),
            _ => self.size(),
        };
        let n = n.min(most);
        (n, predicted[..n.min(predicted.len())].to_vec())
    }

    /// How many tokens the next step proposes from the drafter: the number that gives the most
    /// tokens a second by what has been measured; 0 for a plain step. A plain step is measured
    /// first, then a draft of the most tokens, then each size as it is chosen.
    pub fn size(&mut self) -> usize {
        self.size_by(self.costs.standing)
    }

    /// As `size`, for a draft from `prediction`, by how often its own drafts stood.
    pub fn size_predicted(&mut self, prediction: &Prediction) -> usize {
        self.size_by(prediction.standing)
    }

    fn size_by(&mut self, standing: Standing) -> usize {
        let c = &self.costs;
        if self.always {
            return self.max;
        }
        let Some(step) = c.step.seconds() else {
            return 0;
        };
        if c.checks.iter().all(|t| t.seconds().is_none()) {
            return self.max;
        }
        let stands = standing.chance();
        let best = (1..=self.max)
            .map(|n| (n, self.tokens_per_second(n, step, stands)))
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
            step: c.step.seconds(),
            checks: (c.checks.iter().enumerate())
                .filter_map(|(rows, t)| t.seconds().map(|t| (rows, t)))
                .collect(),
            draft: c.draft.seconds(),
            stands: c.standing.chance(),
        }
    }

    /// The tokens a second a draft of `n` would give, each standing with chance `stands`: the
    /// tokens it is expected to keep and the model's own after them, over the time to draft and
    /// check them.
    fn tokens_per_second(&self, n: usize, step: f64, stands: f64) -> f64 {
        let c = &self.costs;
        let tokens: f64 = (0..=n).map(|i| stands.powi(i as i32)).sum();
        tokens / (self.check_time(n + 1, step) + n as f64 * c.draft.seconds().unwrap_or(0.0))
    }

    /// A check of `rows`, as measured; a size not measured yet, at the least it may cost: what the
    /// dearest measured check of fewer rows (or a plain step) took. A check's time does not grow
    /// row by row: its products take the rows in groups (four tokens to a pass over the weights
    /// where the adapter runs on a CPU), so a check of 4 rows may cost what one of 3 does and one of
    /// 5 nearly twice that. Estimated at its least, a size is tried once and then known.
    fn check_time(&self, rows: usize, step: f64) -> f64 {
        let checks = &self.costs.checks;
        if let Some(t) = checks.get(rows).and_then(Timed::seconds) {
            return t;
        }
        (checks[..rows.min(checks.len())].iter())
            .filter_map(Timed::seconds)
            .fold(step, f64::max)
    }

    /// Counts a plain step and what it took.
    pub fn record_step(&mut self, seconds: f64) {
        self.costs.step.add(seconds);
    }

    /// Counts a check of `proposed` tokens from the drafter of which the first `accepted` stood,
    /// with the time drafting them took and the time the check took.
    pub fn record_check(&mut self, proposed: usize, accepted: usize, draft: f64, check: f64) {
        self.costs.standing.record(proposed, accepted);
        self.costs.draft.add(draft / proposed.max(1) as f64);
        self.record_check_time(proposed, accepted, check);
    }

    /// As `record_check`, for tokens drafted from `prediction`, whose counts take them.
    pub fn record_predicted_check(
        &mut self,
        prediction: &mut Prediction,
        (proposed, accepted): (usize, usize),
        check: f64,
    ) {
        prediction.standing.record(proposed, accepted);
        prediction.accepted += accepted;
        prediction.rejected += proposed - accepted;
        self.record_check_time(proposed, accepted, check);
    }

    fn record_check_time(&mut self, proposed: usize, accepted: usize, check: f64) {
        self.stats.checks += 1;
        self.stats.proposed += proposed as u64;
        self.stats.accepted += accepted as u64;
        let c = &mut self.costs;
        c.plain_steps = 0;
        if let Some(t) = c.checks.get_mut(proposed + 1) {
            t.add(check);
        }
    }
}

/// A moving average of the times something took. The first time stands alone until a second
/// replaces it: the first run of a plan may have compiled its kernels (a browser's WebGPU compiles
/// a pipeline where it is first used, which there can take longer than the run), and a first
/// check that counted that would make drafting look dear for the rest of the reply.
#[derive(Clone, Copy, Debug, Default)]
struct Timed {
    average: f64,
    samples: u32,
}

impl Timed {
    fn add(&mut self, t: f64) {
        self.average = match self.samples {
            0 | 1 => t,
            _ => KEEP * self.average + (1.0 - KEEP) * t,
        };
        self.samples += 1;
    }

    /// The average, once anything was timed.
    fn seconds(&self) -> Option<f64> {
        (self.samples > 0).then_some(self.average)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A speculation that has measured a step of `step` seconds and checks of every size costing
    /// `per_row` more a row than a step, and then checks of 4 drafted tokens, `accepted` of them
    /// standing each time.
    fn measured(step: f64, per_row: f64, accepted: usize) -> Speculation {
        let mut s = Speculation::new(Drafter::Lookup, 6);
        s.record_step(step);
        for n in 1..=6 {
            s.record_check(n, accepted.min(n), 0.0, step + n as f64 * per_row);
        }
        for _ in 0..20 {
            s.record_check(4, accepted, 0.0, step + 4.0 * per_row);
        }
        s
    }

    #[test]
    fn a_prediction_is_followed_and_found_again_past_a_change() {
        let prediction = Prediction::new(vec![10, 11, 12, 13, 14, 15, 16]);
        let prompt = [1, 2, 3];
        // The reply so far says what was predicted: the prediction goes on.
        assert_eq!(
            prediction.propose(&[1, 2, 3, 10], &[10], 3),
            vec![11, 12, 13]
        );
        // It changed a token (12 became 99) and went on as predicted (13 14): found again there.
        let context = [&prompt[..], &[10, 11, 99, 13, 14]].concat();
        assert_eq!(prediction.propose(&context, &context[3..], 2), vec![15, 16]);
        // Said all of it, or nothing like it: nothing.
        let all = [&prompt[..], &prediction.tokens].concat();
        assert!(prediction.propose(&all, &all[3..], 2).is_empty());
        assert!(prediction.propose(&[1, 2, 3, 50], &[50], 2).is_empty());
    }

    #[test]
    fn a_check_size_not_measured_is_tried_at_the_least_it_may_cost() {
        // A CPU-backed adapter whose checks take the rows four at a time: a check of up to 4 rows
        // costs 1.3 steps, of 5 to 8 rows 2.5; a drafted token a third of a step, most standing.
        let check = |rows: usize| if rows <= 4 { 2.6 } else { 5.0 };
        let mut s = Speculation::new(Drafter::Lookup, 6);
        s.record_step(2.0);
        s.record_check(6, 6, 6.0 * 0.65, check(7));
        s.record_check(2, 2, 2.0 * 0.65, check(3));
        // Each size not measured may cost what the dearest smaller one did: each is tried once,
        // until the draft of 3 (a check of 4 rows) is known to give the most.
        let mut tried = Vec::new();
        for _ in 0..12 {
            let n = s.size();
            tried.push(n);
            s.record_check(n, n, n as f64 * 0.65, check(n + 1));
        }
        let settled = tried.iter().position(|&n| n == 3).expect("a draft of 3");
        assert!(settled <= 3, "{tried:?}");
        assert!(tried[settled..].iter().all(|&n| n == 3), "{tried:?}");
        let explored = &tried[..settled];
        assert!(explored.iter().all(|&n| n > 3), "{tried:?}");
        assert!(explored.windows(2).all(|w| w[0] != w[1]), "{tried:?}");
    }

    #[test]
    fn a_first_run_that_compiled_its_kernels_is_replaced_by_the_second() {
        let mut s = Speculation::new(Drafter::Lookup, 6);
        s.record_step(0.01);
        s.record_check(6, 6, 0.0, 0.5);
        assert_eq!(s.measured().checks, vec![(7, 0.5)]);
        s.record_check(6, 6, 0.0, 0.011);
        assert_eq!(s.measured().checks, vec![(7, 0.011)]);
        s.record_check(6, 6, 0.0, 0.015);
        assert_eq!(s.measured().checks, vec![(7, 0.75 * 0.011 + 0.25 * 0.015)]);
    }

    #[test]
    fn a_prediction_is_drafted_from_where_the_drafters_drafts_fell() {
        // A CPU-backed adapter where the drafter's tokens mostly fell: plain steps for it, drafts
        // of a prediction, until its own drafts fall too.
        let mut s = measured(0.07, 0.05, 1);
        let mut prediction = Prediction::new(vec![1; 64]);
        assert_eq!(s.size(), 0);
        assert!(s.size_predicted(&prediction) > 0);
        for _ in 0..8 {
            s.record_predicted_check(&mut prediction, (4, 0), 0.27);
        }
        assert_eq!(s.size_predicted(&prediction), 0);
        assert_eq!((prediction.accepted, prediction.rejected), (0, 32));
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

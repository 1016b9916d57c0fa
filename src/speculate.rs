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
    /// How many the next step proposes: up by two after a draft kept whole, down to one past those
    /// kept after one that fell, so a draft costs little where drafts fail.
    size: usize,
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

impl SpeculationStats {
    /// Tokens each check gave on average: those kept and the model's own after them.
    pub fn tokens_per_check(&self) -> f64 {
        (self.accepted + self.checks) as f64 / self.checks.max(1) as f64
    }
}

impl Speculation {
    pub fn new(drafter: Drafter, max: usize) -> Speculation {
        let max = max.max(1);
        Speculation {
            drafter,
            max,
            size: max,
            stats: SpeculationStats::default(),
        }
    }

    /// How many tokens the next step proposes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Counts a check of `proposed` drafted tokens of which the first `accepted` stood, and sizes
    /// the next draft by it.
    pub fn record(&mut self, proposed: usize, accepted: usize) {
        self.stats.checks += 1;
        self.stats.proposed += proposed as u64;
        self.stats.accepted += accepted as u64;
        self.size = match accepted >= proposed {
            true => self.size + 2,
            false => accepted + 1,
        }
        .clamp(1, self.max);
    }
}

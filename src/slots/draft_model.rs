//! A draft model beside a server's parallel slots: one sequence of its own for each slot, brought to
//! the slot's tokens before each draft, and decoding ahead of every drafting slot at once, one pass
//! a drafted token for all of them (`Slots::run`).

use super::Slots;
use crate::engine::Engine;
use crate::sampler::Sampler;
use crate::sampler::Want;
use crate::speculate::{Asked, Draft, DraftLimits, DraftModel};
use crate::Error;
use web_time::Instant;

pub struct DraftSlots {
    engine: Engine,
    /// The draft's cache, split as the model's is: its slot s drafts for the model's slot s.
    slots: Slots,
}

/// A slot's wish for a draft: where it stands and how many tokens it may take.
pub struct DraftFor<'a> {
    pub slot: usize,
    /// The model's tokens in the slot, and the token picked last after them.
    pub cached: &'a [u32],
    pub token: u32,
    /// Tokens to draft at most.
    pub n: usize,
    /// The slot's reply's sampler: its grammar masks the draft, its settings draw it.
    pub sampler: &'a mut Sampler,
    /// The least chance the draft may give a token and draft on after it (`Draft::min_chance`).
    pub min_chance: f32,
}

impl DraftSlots {
    /// `model` drafting for slots of the model: loaded for as many sequences as the model's slots,
    /// and with the model's context, so that its slots hold what the model's do.
    pub fn new(model: DraftModel) -> DraftSlots {
        let slots = Slots::new(&model.engine);
        DraftSlots {
            engine: model.engine,
            slots,
        }
    }

    /// A draft for each of `wanted`, in order (an empty one where the draft model cannot go on:
    /// the token picked last is not in its vocabulary, or the slot's tokens fill its context).
    /// Each draft's `catching_up` is the time the draft's slots took to read the tokens they
    /// lacked, all together.
    pub async fn draft(
        &mut self,
        wanted: &mut [DraftFor<'_>],
        limits: &mut DraftLimits<'_>,
    ) -> Result<Vec<Draft>, Error> {
        let mut drafts = Vec::with_capacity(wanted.len());
        for w in wanted.iter_mut() {
            let mut draft = Draft::start(w.sampler, limits)?;
            draft.min_chance = w.min_chance;
            drafts.push(draft);
        }
        let start = Instant::now();
        let mut going = self.catch_up(wanted).await?;
        let catching_up = start.elapsed().as_secs_f64();
        let n_vocab = self.engine.n_vocab();
        // Each slot's tokens as the model's sampler sees them (its penalties look back over them),
        // and the token each runs next.
        let mut seen: Vec<Vec<u32>> = wanted.iter().map(|w| w.cached.to_vec()).collect();
        let mut next: Vec<u32> = wanted.iter().map(|w| w.token).collect();
        loop {
            let rows = self.slots.rows();
            going.retain(|&i| {
                drafts[i].tokens.len() < wanted[i].n && self.slots.pos(wanted[i].slot) < rows
            });
            if going.is_empty() {
                break;
            }
            let asked: Vec<Asked> = (going.iter())
                .map(|&i| drafts[i].ask(wanted[i].sampler, &mut seen[i], next[i], n_vocab))
                .collect();
            let wants: Vec<Want> = asked.iter().map(|a| a.want.clone()).collect();
            let tokens: Vec<(usize, u32)> =
                going.iter().map(|&i| (wanted[i].slot, next[i])).collect();
            let steps = self.slots.run(&mut self.engine, &tokens, &wants).await?;
            let mut stopped = Vec::new();
            for ((&i, step), asked) in going.iter().zip(&steps).zip(&asked) {
                let sampler = &mut *wanted[i].sampler;
                match drafts[i].take_drawn(asked, step, sampler, limits)? {
                    Some(token) => next[i] = token,
                    None => stopped.push(i),
                }
            }
            going.retain(|i| !stopped.contains(i));
        }
        for draft in &mut drafts {
            draft.catching_up = catching_up;
        }
        Ok(drafts)
    }

    /// Brings the draft's slot of each of `wanted` to hold its tokens but the token picked last
    /// (which its first drafting step runs), reusing what the slot holds in common with them, all
    /// slots' tokens read together a chunk at a time. Returns the indexes in `wanted` that can
    /// draft. The draft reads no token past its vocabulary (an image's rows, which only the
    /// model's projector made): its positions then run behind the model's, which changes its
    /// guesses, never what the model picks.
    async fn catch_up(&mut self, wanted: &[DraftFor<'_>]) -> Result<Vec<usize>, Error> {
        let n_vocab = self.engine.n_vocab();
        let mut going = Vec::with_capacity(wanted.len());
        for (i, w) in wanted.iter().enumerate() {
            if w.n == 0 || w.token >= n_vocab {
                continue;
            }
            let read: Vec<u32> = (w.cached.iter().copied().chain([w.token]))
                .filter(|&t| t < n_vocab)
                .collect();
            // Room for the token picked last and a drafted token after it.
            if read.len() + 1 > self.slots.rows() as usize {
                continue;
            }
            self.slots.begin(w.slot, &read)?;
            going.push(i);
        }
        loop {
            let reading: Vec<usize> = (going.iter().map(|&i| wanted[i].slot))
                .filter(|&s| self.slots.reading(s))
                .collect();
            if reading.is_empty() {
                return Ok(going);
            }
            self.slots.read_chunks(&mut self.engine, &reading).await?;
        }
    }
}

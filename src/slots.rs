//! Several conversations on one engine at once (a server's parallel slots). Each slot owns an equal
//! share of the KV cache and remembers the tokens it holds, so a request that continues a
//! conversation a slot still holds reads only what is new. One decode step runs a token of every
//! slot that is generating (`Engine::step_sequences`: one pass, one submit), or where slots speculate,
//! each slot's token and its draft after it (`Engine::step_rows`); prompts are read a chunk at a time
//! between steps, the new requests' prompts together in one run, so new requests hold the others up
//! by one chunk at most.

mod draft_model;
pub use draft_model::{DraftFor, DraftSlots};

use crate::engine::{Engine, Pending, StepTokens};
use crate::gpu::Segment;
use crate::sampler::{Sampler, SequenceStep, Want};
use crate::speculate::{Draft, DraftLimits, Picked};
use crate::Error;

pub struct Slots {
    slots: Vec<Slot>,
    /// Positions each slot holds.
    rows: u32,
    /// Prompt tokens read in one run.
    chunk: usize,
    /// Ids from here on name images' rows, which a run takes whole (`Engine::hold_image`).
    n_vocab: u32,
    /// Counts the slots' uses, for the least recently used.
    uses: u64,
    /// Counts the steps (`step`): a step submitted ahead is for the next one only.
    steps: u64,
    /// The step submitted ahead of the slots stepping (`step_ahead`).
    ahead: Option<Ahead>,
}

/// A step submitted before the step before it was read back, its tokens that step's choices.
struct Ahead {
    /// The slots it steps, in its rows' order, each with where its sampler's seeded generator
    /// stood before its want (a step dropped gives back their draws); None where the slot's request
    /// is gone since (`forget_ahead`), its sampler with it, which leaves the step for no one.
    slots: Vec<(usize, Option<u64>)>,
    step: Pending,
    /// The `Slots::step` it is for.
    for_step: u64,
}

struct Slot {
    /// Its first row of the cache.
    base: u32,
    /// The tokens whose keys and values its rows hold, in order.
    cached: Vec<u32>,
    /// Prompt tokens still to read into the cache.
    pending: Vec<u32>,
    last_use: u64,
}

/// One slot's part of a decode step (`Slots::step`).
pub struct SlotStep<'a> {
    pub slot: usize,
    /// The token to run at the slot's next position: the last of its prompt, or the one picked at
    /// its previous step.
    pub token: u32,
    /// Tokens proposed after it (none: a plain step), checked in the same pass.
    pub draft: Draft,
    pub sampler: &'a mut Sampler,
    /// Whether the reply may go on past the token this step picks, its slot not speculating: where
    /// the slot steps alone and its sampler's choice is the GPU's, the step after it is then
    /// submitted before this one is read back, as a session's reply steps (`Engine::submit_step`).
    pub ahead: bool,
}

impl Slots {
    /// As many slots as the engine runs sequences, the context split evenly among them.
    pub fn new(engine: &Engine) -> Slots {
        let n = engine.sequences();
        let rows = engine.n_ctx() / n;
        Slots {
            slots: (0..n)
                .map(|i| Slot {
                    base: i * rows,
                    cached: Vec::new(),
                    pending: Vec::new(),
                    last_use: 0,
                })
                .collect(),
            rows,
            chunk: engine.stats.chunk_tokens as usize,
            n_vocab: engine.n_vocab(),
            uses: 0,
            steps: 0,
            ahead: None,
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Positions each slot holds: a request's context.
    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// The slot for `prompt` among those `free` allows: the one whose cache shares the longest start
    /// with it, or else the least recently used.
    pub fn choose(&self, prompt: &[u32], free: impl Fn(usize) -> bool) -> Option<usize> {
        let shared = |s: &Slot| common_prefix(&s.cached, prompt);
        (0..self.slots.len()).filter(|&i| free(i)).max_by_key(|&i| {
            let s = &self.slots[i];
            (shared(s), std::cmp::Reverse(s.last_use))
        })
    }

    /// Sets slot `s` to read `prompt`: it keeps the longest start its cache shares with it (up to an
    /// image it would cut) and queues the rest but the last token, which the slot's first step runs.
    /// Returns that last token and how many tokens the prompt leaves to process, the last included.
    pub fn begin(&mut self, s: usize, prompt: &[u32]) -> Result<(u32, usize), Error> {
        let Some((&last, _)) = prompt.split_last() else {
            return Err(Error::Model("the prompt is empty".into()));
        };
        if prompt.len() > self.rows as usize {
            return Err(Error::ContextFull(self.rows));
        }
        let images = ImageSpans::new(prompt, self.n_vocab);
        if last >= self.n_vocab {
            return Err(Error::Model(
                "the prompt ends in an image: a reply follows text".into(),
            ));
        }
        if let Some(long) = images.longest().filter(|&n| n > self.chunk) {
            return Err(Error::Model(format!(
                "an image of {long} tokens does not fit a prompt run of {}",
                self.chunk
            )));
        }
        self.uses += 1;
        self.forget_ahead(s);
        let slot = &mut self.slots[s];
        slot.last_use = self.uses;
        let keep = images.start_of(common_prefix(&slot.cached, prompt).min(prompt.len() - 1));
        slot.cached.truncate(keep);
        slot.pending = prompt[keep..prompt.len() - 1].to_vec();
        Ok((last, prompt.len() - keep))
    }

    /// Whether slot `s` still has prompt to read.
    pub fn reading(&self, s: usize) -> bool {
        !self.slots[s].pending.is_empty()
    }

    /// Stops reading slot `s`'s prompt (its client left); what was read stays cached.
    pub fn abandon(&mut self, s: usize) {
        self.slots[s].pending.clear();
        self.forget_ahead(s);
    }

    /// Drops slot `s`'s step submitted ahead, where it has one: its request is gone.
    fn forget_ahead(&mut self, s: usize) {
        let slots = self.ahead.iter_mut().flat_map(|a| a.slots.iter_mut());
        for (_, draws) in slots.filter(|(slot, _)| *slot == s) {
            *draws = None;
        }
    }

    /// Takes the step submitted ahead where it is for this step of exactly these slots, in this
    /// order; else drops it, giving each of its slots' samplers back its draw where that slot steps
    /// now, among `steps`.
    fn take_ahead(&mut self, steps: &mut [SlotStep<'_>]) -> Option<Pending> {
        let ahead = self.ahead.take()?;
        let same_slots = (ahead.slots.len() == steps.len())
            && (ahead.slots.iter().zip(steps.iter()))
                .all(|(&(slot, draws), step)| slot == step.slot && draws.is_some());
        if ahead.for_step == self.steps && same_slots {
            return Some(ahead.step);
        }
        for (slot, draws) in ahead.slots {
            let step = steps.iter_mut().find(|s| s.slot == slot);
            if let (Some(step), Some(draws)) = (step, draws) {
                step.sampler.set_draws(draws);
            }
        }
        None
    }

    /// Positions slot `s` holds.
    pub fn pos(&self, s: usize) -> u32 {
        self.slots[s].cached.len() as u32
    }

    /// The tokens slot `s` holds, in order.
    pub fn cached(&self, s: usize) -> &[u32] {
        &self.slots[s].cached
    }

    /// The tokens the slots' caches hold and those they are to read: what names the images whose
    /// rows the engine must keep (`Engine::forget_images`).
    pub fn tokens(&self) -> impl Iterator<Item = u32> + '_ {
        (self.slots.iter()).flat_map(|s| s.cached.iter().chain(&s.pending).copied())
    }

    /// Reads the next piece of the prompts of the slots in `reading` into their rows of the cache, in
    /// one run of at most a chunk's tokens (`chunk_shares`).
    pub async fn read_chunks(
        &mut self,
        engine: &mut Engine,
        reading: &[usize],
    ) -> Result<(), Error> {
        let pending: Vec<&[u32]> = reading
            .iter()
            .map(|&s| &self.slots[s].pending[..])
            .collect();
        let take = chunk_shares(&pending, self.chunk, self.n_vocab);
        let chunks: Vec<(usize, Vec<u32>)> = (reading.iter().zip(&take))
            .filter(|(_, &n)| n > 0)
            .map(|(&s, &n)| (s, self.slots[s].pending.drain(..n).collect()))
            .collect();
        let segments: Vec<Segment> = (chunks.iter())
            .map(|(s, tokens)| {
                Segment::new(
                    self.slots[*s].base,
                    self.slots[*s].cached.len() as u32,
                    tokens,
                )
            })
            .collect();
        engine.feed_sequences(&segments).await?;
        // Done before the next step starts: the engine times its steps to choose how to run them,
        // and a step that waited for a chunk would seem to cost the chunk too.
        engine.gpu.finished().await?;
        for (s, tokens) in chunks {
            self.slots[s].cached.extend_from_slice(&tokens);
        }
        Ok(())
    }

    /// One decode step of the slots in `steps` (none reading its prompt, each with room for its
    /// token and draft): each token runs at its slot's next position, and each sampler picks the
    /// token after it, with its log-probability where the sampler reports them; where slots bring
    /// drafts, their rows run in the same pass and each slot keeps the drafted tokens its sampler
    /// judges to stand (`Draft::judge`): for each slot, the tokens it picked and how many drafted
    /// tokens stood. `ends` says which tokens end a reply.
    pub async fn step(
        &mut self,
        engine: &mut Engine,
        steps: &mut [SlotStep<'_>],
        ends: &dyn Fn(u32) -> bool,
    ) -> Result<Vec<Picked>, Error> {
        self.steps += 1;
        for step in steps.iter() {
            let slot = &self.slots[step.slot];
            assert!(slot.pending.is_empty(), "a slot still reading its prompt");
            if slot.cached.len() + 1 + step.draft.tokens.len() > self.rows as usize {
                return Err(Error::ContextFull(self.rows));
            }
        }
        let plain = steps.iter().all(|s| s.draft.tokens.is_empty());
        let on_gpu = engine.steps_ahead() && steps.iter().all(|s| s.sampler.chooses_on_gpu());
        if plain && on_gpu {
            return self.step_ahead(engine, steps).await;
        }
        self.take_ahead(steps);
        if plain {
            let together = engine.steps_together(steps.len());
            return self.step_plain(engine, steps, together).await;
        }
        let n_vocab = engine.n_vocab();
        let mut limits = DraftLimits {
            n_vocab,
            ends,
            mask_time: &mut engine.stats.totals.mask,
        };
        let mut checks = Vec::with_capacity(steps.len());
        for step in steps.iter_mut() {
            // A slot without a draft in a pass with others' still needs its grammar's mask.
            if step.draft.allowed.is_empty() {
                step.draft = Draft::start(step.sampler, &mut limits)?;
            }
            let cached = &self.slots[step.slot].cached;
            checks.push(step.draft.check_rows(step.sampler, cached, step.token));
        }
        let segments: Vec<Segment> = (steps.iter().zip(&checks))
            .map(|(step, (rows, _, _))| {
                let slot = &self.slots[step.slot];
                Segment::new(slot.base, slot.cached.len() as u32, rows)
            })
            .collect();
        let wants: Vec<Want> = (checks.iter())
            .flat_map(|(_, _, wants)| wants.iter().cloned())
            .collect();
        let mut read = engine.step_rows(&segments, &wants).await?.into_iter();
        let mut limits = DraftLimits {
            n_vocab,
            ends,
            mask_time: &mut engine.stats.totals.mask,
        };
        let mut picked = Vec::with_capacity(steps.len());
        for (step, (rows, histories, _)) in steps.iter_mut().zip(&checks) {
            let read: Vec<_> = read.by_ref().take(rows.len()).collect();
            let judged = (step.draft).judge(step.sampler, &read, histories, &mut limits)?;
            // The slot keeps the rows whose successors were picked; the rest are overwritten later.
            (self.slots[step.slot].cached).extend_from_slice(&rows[..judged.tokens.len()]);
            picked.push(judged);
        }
        Ok(picked)
    }

    /// `step` where each slot's sampler's choice is the GPU's (`Engine::submit_rows`): a slot
    /// stepping alone, or slots stepping together in one pass (`Engine::steps_together`). The step
    /// submitted ahead at the step before (for these slots, in this order; its tokens the choices
    /// read back since, the steps' tokens), or else submitted now; then, where every reply may go
    /// on and every slot has room, the step after it submitted before this one is read back, each
    /// row's token copied on the GPU from its own row's choice. Slots that step one at a time take
    /// `step_plain` (a pass submitted ahead at the step before is still read first).
    async fn step_ahead(
        &mut self,
        engine: &mut Engine,
        steps: &mut [SlotStep<'_>],
    ) -> Result<Vec<Picked>, Error> {
        let together = steps.len() == 1 || engine.steps_together(steps.len());
        let n_logits = engine.n_logits();
        let at: Vec<(u32, u32)> = (steps.iter())
            .map(|s| {
                (
                    self.slots[s.slot].base,
                    self.slots[s.slot].cached.len() as u32,
                )
            })
            .collect();
        let current = match self.take_ahead(steps) {
            Some(current) => current,
            None if together => {
                let mask_time = &mut engine.stats.totals.mask;
                let wants: Vec<Want> = (steps.iter_mut())
                    .map(|s| s.sampler.want(&[], n_logits, mask_time))
                    .collect::<Result<_, _>>()?;
                let tokens: Vec<u32> = steps.iter().map(|s| s.token).collect();
                (engine.submit_rows(&at, StepTokens::Ids(&tokens), &wants)).await?
            }
            None => return self.step_plain(engine, steps, false).await,
        };
        for step in steps.iter() {
            self.slots[step.slot].cached.push(step.token);
        }
        let room = at.iter().all(|&(_, pos)| pos + 1 < self.rows);
        if together && room && steps.iter().all(|s| s.ahead) {
            let mut slots = Vec::with_capacity(steps.len());
            let mut wants = Vec::with_capacity(steps.len());
            for step in steps.iter_mut() {
                slots.push((step.slot, Some(step.sampler.draws())));
                let mask_time = &mut engine.stats.totals.mask;
                wants.push(step.sampler.want(&[], n_logits, mask_time)?);
            }
            let after: Vec<(u32, u32)> = at.iter().map(|&(base, pos)| (base, pos + 1)).collect();
            let next = StepTokens::ChosenIn(&current);
            let next = engine.submit_rows(&after, next, &wants).await?;
            self.ahead = Some(Ahead {
                slots,
                step: next,
                for_step: self.steps + 1,
            });
        }
        let read = engine.finish_rows(current).await?;
        let mut picked = Vec::with_capacity(steps.len());
        for (step, read) in steps.iter_mut().zip(read) {
            let mask_time = &mut engine.stats.totals.mask;
            let (next, log_prob) = step.sampler.pick_from_step(read, &[], mask_time)?;
            step.sampler.accept(next, mask_time)?;
            picked.push(Picked {
                tokens: vec![(next, log_prob)],
                stood: 0,
            });
        }
        Ok(picked)
    }

    /// `step` where no slot brings a draft: a token each (`run`), in one pass or one a slot as
    /// `together` says (`Engine::steps_together`), each sampler picking after its own.
    async fn step_plain(
        &mut self,
        engine: &mut Engine,
        steps: &mut [SlotStep<'_>],
        together: bool,
    ) -> Result<Vec<Picked>, Error> {
        let histories: Vec<Vec<u32>> = (steps.iter())
            .map(|step| (step.sampler).history(&self.slots[step.slot].cached, step.token))
            .collect();
        let n_logits = engine.n_logits();
        let mask_time = &mut engine.stats.totals.mask;
        let wants: Vec<Want> = (steps.iter_mut().zip(&histories))
            .map(|(step, history)| step.sampler.want(history, n_logits, mask_time))
            .collect::<Result<_, _>>()?;
        let tokens: Vec<(usize, u32)> = steps.iter().map(|s| (s.slot, s.token)).collect();
        let read = self.run_as(engine, &tokens, &wants, together).await?;
        let mut picked = Vec::with_capacity(steps.len());
        for ((step, read), history) in steps.iter_mut().zip(read).zip(&histories) {
            let sampler = &mut *step.sampler;
            let mask_time = &mut engine.stats.totals.mask;
            let (next, log_prob) = sampler.pick_from_step(read, history, mask_time)?;
            sampler.accept(next, mask_time)?;
            picked.push(Picked {
                tokens: vec![(next, log_prob)],
                stood: 0,
            });
        }
        Ok(picked)
    }

    /// Runs each (slot, token) of `tokens` at its slot's next position, in one pass or one a
    /// sequence (`Engine::step_sequences`), reading back what its `wants` asks after it; the tokens
    /// join their slots' caches.
    pub async fn run(
        &mut self,
        engine: &mut Engine,
        tokens: &[(usize, u32)],
        wants: &[Want],
    ) -> Result<Vec<SequenceStep>, Error> {
        let together = engine.steps_together(tokens.len());
        self.run_as(engine, tokens, wants, together).await
    }

    /// `run` in one pass or one a sequence, as `together` says.
    async fn run_as(
        &mut self,
        engine: &mut Engine,
        tokens: &[(usize, u32)],
        wants: &[Want],
        together: bool,
    ) -> Result<Vec<SequenceStep>, Error> {
        for &(s, _) in tokens {
            if self.slots[s].cached.len() >= self.rows as usize {
                return Err(Error::ContextFull(self.rows));
            }
        }
        let runs: Vec<[u32; 1]> = tokens.iter().map(|&(_, token)| [token]).collect();
        let segments: Vec<Segment> = (tokens.iter().zip(&runs))
            .map(|(&(s, _), token)| {
                let slot = &self.slots[s];
                Segment::new(slot.base, slot.cached.len() as u32, token)
            })
            .collect();
        let read = engine.step_sequences(&segments, wants, together).await?;
        for &(s, token) in tokens {
            self.slots[s].cached.push(token);
        }
        Ok(read)
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// How many tokens of each of `pending` one run of `chunk` tokens takes: an equal share each, then
/// what a short prompt leaves of its share to the others, in turn. A share that would end inside
/// an image takes the image whole where the run has room for it, else ends before it; prompts that
/// go on with an image go first, so an image waits one run at most behind others' text.
fn chunk_shares(pending: &[&[u32]], chunk: usize, n_vocab: u32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pending.len()).collect();
    order.sort_by_key(|&i| pending[i].first().is_none_or(|&t| t < n_vocab));
    let mut take = vec![0usize; pending.len()];
    let mut room = chunk;
    let share = chunk.div_ceil(pending.len().max(1));
    for pass in 0..2 {
        for &i in &order {
            let (n, tokens) = (&mut take[i], pending[i]);
            let most = *n + room;
            let want = match pass {
                0 => tokens.len().min(share),
                _ => tokens.len(),
            };
            let end = ImageSpans::new(tokens, n_vocab).whole(want.min(most), most);
            room -= end - *n;
            *n = end;
        }
    }
    take
}

/// A prompt's images: spans of ids from `n_vocab` on, which a run takes whole.
struct ImageSpans<'a> {
    tokens: &'a [u32],
    n_vocab: u32,
}

impl<'a> ImageSpans<'a> {
    fn new(tokens: &'a [u32], n_vocab: u32) -> Self {
        ImageSpans { tokens, n_vocab }
    }

    /// Whether the tokens cut at `at` would cut an image.
    fn inside(&self, at: usize) -> bool {
        let image = |i: usize| self.tokens[i] >= self.n_vocab;
        at > 0 && at < self.tokens.len() && image(at - 1) && image(at)
    }

    /// Where to cut at `at` or before, no image cut: the start of the image `at` is inside.
    fn start_of(&self, at: usize) -> usize {
        (0..=at).rev().find(|&i| !self.inside(i)).unwrap_or(0)
    }

    /// Where to cut near `at`, no image cut and no further than `most`: past the image `at` is
    /// inside where it ends by `most`, else before it.
    fn whole(&self, at: usize, most: usize) -> usize {
        let end = (at..=self.tokens.len()).find(|&i| !self.inside(i));
        match end {
            Some(end) if end <= most => end,
            _ => self.start_of(at),
        }
    }

    /// The tokens of its longest image.
    fn longest(&self) -> Option<usize> {
        let mut longest = None;
        let mut start = 0;
        for i in 0..=self.tokens.len() {
            if !self.inside(i) {
                let run = &self.tokens[start..i];
                if run.first().is_some_and(|&t| t >= self.n_vocab) {
                    longest = longest.max(Some(run.len()));
                }
                start = i;
            }
        }
        longest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_shares_its_chunk_and_never_cuts_an_image() {
        // Ids from 100 on are images' rows.
        let text = [1u32; 10];
        let mut prompt = vec![1, 2, 3];
        prompt.extend(100..106); // an image at 3..9
        prompt.extend([4, 5]);
        let image_on = &prompt[3..];
        // Alone, a prompt takes the chunk, up to an image the chunk would cut.
        assert_eq!(chunk_shares(&[&prompt], 16, 100), vec![11]);
        assert_eq!(chunk_shares(&[&prompt], 6, 100), vec![3]);
        assert_eq!(chunk_shares(&[image_on], 6, 100), vec![6]);
        // Shares of 4: the text before the image, and the rest to the other.
        assert_eq!(chunk_shares(&[&text, &prompt], 8, 100), vec![5, 3]);
        // A prompt that goes on with an image takes it whole first, past its share.
        assert_eq!(chunk_shares(&[&text, image_on], 8, 100), vec![2, 6]);
        assert_eq!(chunk_shares(&[&text, image_on], 10, 100), vec![4, 6]);
        assert_eq!(chunk_shares(&[image_on, &text], 7, 100), vec![6, 1]);
        // Two images with room for one: the first waits for nothing, the other for a run.
        assert_eq!(chunk_shares(&[image_on, image_on], 10, 100), vec![8, 0]);
    }

    #[test]
    fn image_spans_say_where_a_prompt_may_be_cut() {
        let tokens = [1, 100, 101, 102, 2, 103, 104];
        let images = ImageSpans::new(&tokens, 100);
        let cuttable: Vec<bool> = (0..=tokens.len()).map(|i| !images.inside(i)).collect();
        assert_eq!(
            cuttable,
            [true, true, false, false, true, true, false, true]
        );
        assert_eq!((images.start_of(3), images.start_of(4)), (1, 4));
        assert_eq!((images.whole(2, 4), images.whole(2, 3)), (4, 1));
        assert_eq!(images.longest(), Some(3));
        assert_eq!(ImageSpans::new(&[1, 2], 100).longest(), None);
    }
}

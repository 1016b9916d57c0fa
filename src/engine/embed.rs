//! Embeddings on the engine: inputs packed into runs of the hidden-state plan (`Forward::hidden`),
//! each input a sequence of its own at its own rows of the cache, the rows its pooling needs read
//! back, pooled and projected on the host.

use super::{values, Engine, Run};
use crate::embeddings::{Pooler, Pooling};
use crate::gpu::Segment;
use crate::Error;
use std::ops::Range;

impl Engine {
    /// How `embed` pools; None where the engine was loaded without embeddings (a chat model not
    /// asked for them, `LoadOptions::pooling`).
    pub fn pooling(&self) -> Option<Pooling> {
        self.pooling
    }

    /// The length of the vectors `embed` gives; None as `pooling`.
    pub fn embedding_width(&self) -> Option<usize> {
        let projected = self.forward.pooled_projections.last().map(|p| p.rows);
        let width = self.forward.hidden.as_ref().map(|h| h.width as usize);
        width.map(|w| projected.unwrap_or(w))
    }

    /// The embedding of each of `inputs` (whole inputs, each from position 0: the cache is
    /// overwritten and left empty): each token's hidden state after the final norm, pooled
    /// (`pooling`), then through the file's projections where it has them
    /// (`Forward::pooled_projections`). Not normalized (`embeddings::normalize`). Inputs share runs
    /// (`pack`), so many short ones cost a few runs rather than one each.
    pub async fn embed(&mut self, inputs: &[&[u32]]) -> Result<Vec<Vec<f32>>, Error> {
        let (Some(pooling), Some(hidden)) = (self.pooling, &self.forward.hidden) else {
            return Err(Error::Model(
                "the model has no pooling to embed with (a chat model: name one to load it for embeddings)".into(),
            ));
        };
        let (batch, width) = (hidden.plan.batch as usize, hidden.width as usize);
        for input in inputs {
            if input.is_empty() {
                return Err(Error::Model("an empty input".into()));
            }
            if input.len() > self.n_ctx as usize {
                return Err(Error::ContextFull(self.n_ctx));
            }
        }
        let lengths: Vec<usize> = inputs.iter().map(|i| i.len()).collect();
        let layout = Layout {
            n_ctx: self.n_ctx as usize,
            batch,
            // An encoder's query sees its whole input: an input never spans two runs (its plan's
            // batch is the whole context, so any input fits one).
            whole_inputs: !crate::models::causal(self.header.architecture().unwrap_or_default()),
            // A recurrent state holds one sequence.
            one_per_fill: !self.forward.recurrent.is_empty(),
        };
        self.rewind(0);
        let mut poolers: Vec<Pooler> = inputs.iter().map(|_| Pooler::new(pooling, width)).collect();
        for run in pack(&lengths, layout) {
            let segments: Vec<Segment> = run
                .iter()
                .map(|p| {
                    let tokens = &inputs[p.input][p.tokens.clone()];
                    Segment::new(p.base as u32, p.tokens.start as u32, tokens)
                })
                .collect();
            // The rows of the run each input's pooling reads, and the span that covers them all.
            let mut row = 0;
            let mut wanted = Vec::new();
            for p in &run {
                let needed = pooling.rows_needed(p.tokens.start, p.tokens.len(), lengths[p.input]);
                if !needed.is_empty() {
                    wanted.push((p.input, row + needed.start..row + needed.end));
                }
                row += p.tokens.len();
            }
            let first = wanted.iter().map(|(_, r)| r.start).min().unwrap_or(0);
            let end = wanted.iter().map(|(_, r)| r.end).max().unwrap_or(0);
            let rows = (first as u32, end as u32);
            let Some(states) = self.run_segments(Run::Hidden { rows }, &segments).await? else {
                continue;
            };
            let states: Vec<f32> = values(states);
            for (input, r) in wanted {
                poolers[input].add(&states[(r.start - first) * width..(r.end - first) * width]);
            }
        }
        self.rewind(0);
        let projections = &self.forward.pooled_projections;
        Ok(poolers
            .into_iter()
            .map(|p| projections.iter().fold(p.finish(), |v, p| p.apply(&v)))
            .collect())
    }
}

/// How `pack` may lay inputs out.
#[derive(Clone, Copy, Debug)]
struct Layout {
    /// Rows of the cache.
    n_ctx: usize,
    /// Tokens of a run.
    batch: usize,
    /// Each input in one run (bidirectional attention sees a whole input at once).
    whole_inputs: bool,
    /// One input in the cache at a time (a model with a recurrent state).
    one_per_fill: bool,
}

/// Part of an input in a run: its tokens `tokens`, its position 0 at cache row `base`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Piece {
    input: usize,
    base: usize,
    tokens: Range<usize>,
}

/// The runs that take inputs of `lengths` tokens (each at most the cache), in order: inputs fill
/// the cache one after another, each at its own rows, and a fill's tokens go in runs of the batch,
/// an input split across runs where it must be (a causal one: its later positions see the rows its
/// earlier run left). An input that would overrun the cache starts a new fill from row 0, once the
/// inputs before it have run.
fn pack(lengths: &[usize], layout: Layout) -> Vec<Vec<Piece>> {
    let capacity = match layout.whole_inputs {
        true => layout.n_ctx.min(layout.batch),
        false => layout.n_ctx,
    };
    let mut fills: Vec<Vec<(usize, usize)>> = Vec::new(); // (input, base)
    let mut used = capacity;
    for (input, &len) in lengths.iter().enumerate() {
        assert!(len <= capacity, "an input longer than a fill");
        if used + len > capacity || layout.one_per_fill {
            fills.push(Vec::new());
            used = 0;
        }
        fills.last_mut().expect("a fill").push((input, used));
        used += len;
    }
    let mut runs = Vec::new();
    for fill in fills {
        let mut run: Vec<Piece> = Vec::new();
        let mut room = layout.batch;
        for (input, base) in fill {
            let len = lengths[input];
            if layout.whole_inputs && len > room {
                runs.push(std::mem::take(&mut run));
                room = layout.batch;
            }
            let mut start = 0;
            while start < len {
                if room == 0 {
                    runs.push(std::mem::take(&mut run));
                    room = layout.batch;
                }
                let take = room.min(len - start);
                run.push(Piece {
                    input,
                    base,
                    tokens: start..start + take,
                });
                start += take;
                room -= take;
            }
        }
        if !run.is_empty() {
            runs.push(run);
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(input: usize, base: usize, tokens: Range<usize>) -> Piece {
        Piece {
            input,
            base,
            tokens,
        }
    }

    #[test]
    fn causal_inputs_share_runs_and_split_across_them() {
        let layout = Layout {
            n_ctx: 10,
            batch: 4,
            whole_inputs: false,
            one_per_fill: false,
        };
        // 3 + 3 fill 6 rows, 5 more would overrun 10: a new fill from row 0.
        let runs = pack(&[3, 3, 5], layout);
        assert_eq!(
            runs,
            [
                vec![piece(0, 0, 0..3), piece(1, 3, 0..1)],
                vec![piece(1, 3, 1..3)],
                vec![piece(2, 0, 0..4)],
                vec![piece(2, 0, 4..5)],
            ]
        );
    }

    #[test]
    fn encoder_inputs_stay_whole() {
        let layout = Layout {
            n_ctx: 8,
            batch: 8,
            whole_inputs: true,
            one_per_fill: false,
        };
        let runs = pack(&[3, 4, 2, 8], layout);
        assert_eq!(
            runs,
            [
                vec![piece(0, 0, 0..3), piece(1, 3, 0..4)],
                vec![piece(2, 0, 0..2)],
                vec![piece(3, 0, 0..8)],
            ]
        );
    }

    #[test]
    fn a_recurrent_model_runs_one_input_at_a_time() {
        let layout = Layout {
            n_ctx: 100,
            batch: 4,
            whole_inputs: false,
            one_per_fill: true,
        };
        let runs = pack(&[2, 5], layout);
        assert_eq!(
            runs,
            [
                vec![piece(0, 0, 0..2)],
                vec![piece(1, 0, 0..4)],
                vec![piece(1, 0, 4..5)],
            ]
        );
    }
}

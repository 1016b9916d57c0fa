//! Rows given in place of token embeddings: an image's tokens, as the vision projector the engine
//! holds makes them (`attach_projector`; its plans are tuned with the model's). The engine holds
//! each image's rows under ids past the vocabulary that are its own (`image_rows.rs`). The embedding
//! kernel leaves such a token's row of the run alone (no table row has its id) and the engine writes
//! the image's row there before the run. An image is one segment of its run, which the attention
//! kernel lets see itself whole (`attention::Shape::both_ways_from`: Gemma 3's images attend both
//! ways), so a prompt's runs never cut one.
//!
//! Where the model rotates by multimodal RoPE (Qwen3.5), an image's tokens share one position,
//! turned further by their row and column in the image's grid of tokens, and the image advances the
//! position by its grid's longer side rather than by its tokens (llama.cpp mtmd's M-RoPE positions):
//! from then on a token's rotation falls behind its cache row (`ImageTurns`).

use super::Engine;
use crate::gpu::{Plan, Segment, Tuning, Turns};
use crate::vision::{Projector, TokenGrid};
use crate::Error;
use std::ops::Range;

/// Images held that no prompt names, the most recently used (`Engine::forget_images`).
const RECENT_IMAGES: usize = 8;

impl Engine {
    /// Takes the projector that makes this model's image rows; refused where the model takes no
    /// such rows or its rows are not the model's embedding width. Its plans are the engine's to tune
    /// from then on (`untuned_shapes`).
    pub fn attach_projector(&mut self, projector: Projector) -> Result<(), Error> {
        let model = self.header.architecture().unwrap_or("the model");
        match self.injected_width() {
            None => Err(Error::Model(format!(
                "{model} takes no images here (loaded one token at a time, or not a model images feed)"
            ))),
            Some(width) if width != projector.width() => Err(Error::Model(format!(
                "the projector makes rows of {}, but {model}'s embeddings are {width} wide: it was made for another model",
                projector.width()
            ))),
            Some(_) if projector.turns_by_grid() != self.forward.multimodal_rope => {
                let (projector_rope, model_rope) = match projector.turns_by_grid() {
                    true => ("by its place in the image's grid", "as text"),
                    false => ("as text", "by their place in the image's grid (multimodal RoPE)"),
                };
                Err(Error::Model(format!(
                    "the projector's image tokens rotate {projector_rope}, but {model} rotates them {model_rope}: it was made for another model"
                )))
            }
            Some(_) => {
                self.projector = Some(projector);
                Ok(())
            }
        }
    }

    pub fn projector(&self) -> Option<&Projector> {
        self.projector.as_ref()
    }

    /// Every plan the engine runs: the model's, then its projector's.
    pub(super) fn plans(&self) -> impl Iterator<Item = &Plan> {
        let projector = self.projector.iter().flat_map(|p| p.plans());
        self.forward.plans().chain(projector)
    }

    /// Gives every plan the kernel shapes of `tuning`.
    pub(super) fn retune_plans(&mut self, tuning: &Tuning) {
        // Commands recorded ahead hold the kernels the plans had.
        self.recorded = None;
        let gpu = self.gpu.clone();
        let projector = self.projector.iter_mut().flat_map(|p| p.plans_mut());
        for plan in self.forward.plans_mut().chain(projector) {
            plan.retune(&gpu, tuning);
        }
    }

    /// Holds `rows`, what the projector made of the image `key` names (its tokens `grid`'s, each
    /// row the model's embedding width: `injected_width`), and returns the ids that name them from
    /// then on (`image_rows`): ids no other image has, or those it already has.
    pub fn hold_image(
        &mut self,
        key: u64,
        grid: TokenGrid,
        rows: Vec<f32>,
    ) -> Result<Range<u32>, Error> {
        let Some(width) = self.injected_width() else {
            return Err(Error::Model(format!(
                "{} takes no rows in place of token embeddings (no images)",
                self.header.architecture().unwrap_or("this model")
            )));
        };
        if rows.len() != grid.tokens() as usize * width as usize {
            return Err(Error::Model(format!(
                "{} values for an image of {} tokens of {width}",
                rows.len(),
                grid.tokens()
            )));
        }
        let rows = self.images.hold(key, grid, rows)?;
        Ok(self.ids(rows))
    }

    /// The ids of the image `key` names, where the engine holds its rows.
    pub fn held_image(&mut self, key: u64) -> Option<Range<u32>> {
        let rows = self.images.find(key)?;
        Some(self.ids(rows))
    }

    /// Forgets the rows of the images no token of `named` names (the prompts the caller's caches
    /// hold and will read), but for the `RECENT_IMAGES` most recently used: a conversation that
    /// comes back to an image is not encoded again.
    pub fn forget_images(&mut self, named: impl IntoIterator<Item = u32>) {
        let n_vocab = self.forward.n_vocab;
        let rows = named.into_iter().filter_map(|t| t.checked_sub(n_vocab));
        self.images.forget_unnamed(rows, RECENT_IMAGES);
    }

    fn ids(&self, rows: Range<u32>) -> Range<u32> {
        let n_vocab = self.forward.n_vocab;
        n_vocab + rows.start..n_vocab + rows.end
    }

    /// `tokens` at `pos` of the sequence at cache row `base` as the run's segments: each image a
    /// segment of its own (what it sees both ways), the tokens between them segments too. Where the
    /// model rotates by multimodal RoPE, each image rotates by its grid and is placed in the
    /// sequence (`ImageTurns`), and the text rotates behind the images before it: a model with only
    /// one sequence, as those are.
    pub(super) fn segments<'a>(
        &mut self,
        base: u32,
        pos: u32,
        tokens: &'a [u32],
    ) -> Result<Vec<Segment<'a>>, Error> {
        let n_vocab = self.forward.n_vocab;
        let rope = self.forward.multimodal_rope;
        if rope && base != 0 {
            return Err(Error::Model(
                "multimodal RoPE places images in one sequence only".into(),
            ));
        }
        if rope {
            self.image_turns.forget_from(pos);
        }
        let mut out = Vec::new();
        for mut s in spans(base, pos, tokens, n_vocab) {
            loop {
                let turn = self.turn_at(s.pos);
                let image = s.tokens[0]
                    .checked_sub(n_vocab)
                    .map(|row| (row, self.images.image_of(row)));
                let Some((row, Some((grid, first, _)))) = image else {
                    // Text, or rows no image holds (which the run refuses).
                    out.push(Segment {
                        turns: Turns::Text(turn),
                        ..s
                    });
                    break;
                };
                // A span of several images' rows (no text between them) is an image at a time.
                let n = ((first + grid.tokens() - row) as usize).min(s.tokens.len());
                let (image, rest) = s.tokens.split_at(n);
                let turns = match rope && row == first {
                    true => {
                        self.image_turns.place(s.pos, grid);
                        Turns::Image {
                            turn,
                            cols: grid.cols,
                        }
                    }
                    false => Turns::Text(turn),
                };
                out.push(Segment {
                    tokens: image,
                    turns,
                    ..s
                });
                if rest.is_empty() {
                    break;
                }
                s = Segment::new(s.base, s.pos + n as u32, rest);
            }
        }
        Ok(out)
    }

    /// Where the main sequence's token at `pos` rotates.
    pub(super) fn turn_at(&self, pos: u32) -> u32 {
        match self.forward.multimodal_rope {
            true => self.image_turns.turn_at(pos),
            false => pos,
        }
    }

    /// The width of the rows `hold_image` takes; None where the model takes none.
    pub fn injected_width(&self) -> Option<u32> {
        let prompt_runs = self.forward.prefill.is_some();
        let rows = self.forward.embedding_rows.as_ref();
        rows.filter(|_| prompt_runs).map(|(_, width)| *width)
    }

    /// Whether `token` names rows a run of the kind that reads images may embed: a token of the
    /// vocabulary, or a row of an image held.
    pub(super) fn names_rows(&self, token: u32) -> bool {
        let n_vocab = self.forward.n_vocab;
        token < n_vocab
            || (self.injected_width().is_some() && self.images.image_of(token - n_vocab).is_some())
    }

    /// Writes the run's image rows into the rows the plan embeds into: token t's at row t. Every
    /// such token names a row held (`names_rows`, checked before the run).
    pub(super) fn write_injected(&self, tokens: &[u32]) {
        let n_vocab = self.forward.n_vocab;
        let Some((buffer, width)) = &self.forward.embedding_rows else {
            return;
        };
        let width = *width as usize;
        let mut t = 0;
        while t < tokens.len() {
            let Some(row) = tokens[t].checked_sub(n_vocab) else {
                t += 1;
                continue;
            };
            let (grid, first, values) = self.images.image_of(row).expect("a row held");
            // The image's rows from `row` on, as far as the tokens name them in order.
            let left = (first + grid.tokens() - row) as usize;
            let n = (tokens[t..].iter().zip(row..))
                .take(left)
                .take_while(|(&token, r)| token == n_vocab + r)
                .count();
            let from = (row - first) as usize * width;
            let rows = &values[from..from + n * width];
            let offset = (t * width * 4) as u64;
            self.gpu
                .queue
                .write_buffer(buffer, offset, bytemuck::cast_slice(rows));
            t += n;
        }
    }
}

/// Where each run of a prompt of `tokens` begins, `batch` tokens a run at most, no span of
/// injected rows (ids from `n_vocab` on) cut: a run that would end inside one ends before it. A span
/// longer than a run is refused.
pub(super) fn prompt_runs(tokens: &[u32], batch: usize, n_vocab: u32) -> Result<Vec<usize>, Error> {
    let spans = injected_spans(tokens, n_vocab);
    if let Some(long) = spans.iter().find(|s| s.len() > batch) {
        return Err(Error::Model(format!(
            "an image of {} tokens does not fit a prompt run of {batch}",
            long.len()
        )));
    }
    let mut starts = Vec::new();
    let mut start = 0;
    while start < tokens.len() {
        starts.push(start);
        let mut end = (start + batch).min(tokens.len());
        // A span that starts a run fits it, so one it cuts starts after the run's start.
        if let Some(cut) = spans.iter().find(|s| s.start < end && end < s.end) {
            end = cut.start;
        }
        start = end;
    }
    Ok(starts)
}

/// The images in the main sequence, where the model rotates by multimodal RoPE: where each starts
/// and how many rows it holds beyond the positions it takes.
#[derive(Default)]
pub(super) struct ImageTurns {
    /// (first row, rows, rows past its positions), by row.
    placed: Vec<(u32, u32, u32)>,
}

impl ImageTurns {
    /// Where the token at `pos` rotates: its position, less what the images wholly before it hold
    /// beyond their positions.
    fn turn_at(&self, pos: u32) -> u32 {
        let behind: u32 = (self.placed.iter())
            .filter(|&&(at, rows, _)| at + rows <= pos)
            .map(|&(_, _, extra)| extra)
            .sum();
        pos - behind
    }

    /// An image of `grid` placed at `pos`: it takes its longer side's positions.
    fn place(&mut self, pos: u32, grid: TokenGrid) {
        let extra = grid.tokens() - grid.cols.max(grid.rows);
        self.placed.push((pos, grid.tokens(), extra));
    }

    /// Forgets the images from `pos` on.
    pub(super) fn forget_from(&mut self, pos: u32) {
        self.placed.retain(|&(at, _, _)| at < pos);
    }
}

/// `tokens` at `pos` of the sequence at cache row `base` as segments: each span of ids past the
/// vocabulary one, the tokens between them one each, rotating at their positions.
fn spans(base: u32, pos: u32, tokens: &[u32], n_vocab: u32) -> Vec<Segment<'_>> {
    let mut out: Vec<Segment> = Vec::new();
    let mut start = 0;
    while start < tokens.len() {
        let injected = tokens[start] >= n_vocab;
        let len = tokens[start..]
            .iter()
            .take_while(|&&t| (t >= n_vocab) == injected)
            .count();
        out.push(Segment::new(
            base,
            pos + start as u32,
            &tokens[start..start + len],
        ));
        start += len;
    }
    out
}

/// The spans of consecutive ids past the vocabulary.
fn injected_spans(tokens: &[u32], n_vocab: u32) -> Vec<Range<usize>> {
    let mut spans: Vec<Range<usize>> = Vec::new();
    for (i, &t) in tokens.iter().enumerate() {
        if t < n_vocab {
            continue;
        }
        match spans.last_mut() {
            Some(span) if span.end == i => span.end = i + 1,
            _ => spans.push(i..i + 1),
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_segments_split_at_injected_rows() {
        let tokens = [1, 2, 100, 101, 102, 3, 103, 4];
        assert_eq!(injected_spans(&tokens, 100), vec![2..5, 6..7]);
        let segs: Vec<(u32, usize)> = spans(0, 10, &tokens, 100)
            .iter()
            .map(|s| (s.pos, s.tokens.len()))
            .collect();
        assert_eq!(segs, vec![(10, 2), (12, 3), (15, 1), (16, 1), (17, 1)]);
    }

    #[test]
    fn prompt_runs_end_before_a_span_they_would_cut() {
        let mut tokens = vec![7; 5];
        tokens.extend(100..106); // a span at 5..11
        tokens.extend([7; 6]);
        assert_eq!(prompt_runs(&tokens, 8, 100).unwrap(), vec![0, 5, 13]);
        assert_eq!(prompt_runs(&tokens, 11, 100).unwrap(), vec![0, 11]);
        assert_eq!(prompt_runs(&tokens[..4], 8, 100).unwrap(), vec![0]);
        let err = prompt_runs(&tokens, 4, 100).unwrap_err().to_string();
        assert!(
            err.contains("6 tokens") && err.contains("run of 4"),
            "{err}"
        );
    }

    #[test]
    fn images_hold_rows_beyond_their_positions() {
        let mut turns = ImageTurns::default();
        // 5 text tokens, an image of 3 x 2 tokens (6 rows, 3 positions) at 5, 4 text tokens, an
        // image of 1 x 4 (4 rows, 4 positions) at 15, then text.
        turns.place(5, TokenGrid { cols: 3, rows: 2 });
        turns.place(15, TokenGrid { cols: 1, rows: 4 });
        assert_eq!(turns.turn_at(4), 4);
        assert_eq!(turns.turn_at(5), 5);
        assert_eq!(turns.turn_at(11), 8);
        assert_eq!(turns.turn_at(15), 12);
        assert_eq!(turns.turn_at(19), 16);
        turns.forget_from(15);
        assert_eq!(turns.turn_at(19), 16);
        turns.forget_from(5);
        assert_eq!(turns.turn_at(19), 19);
    }
}

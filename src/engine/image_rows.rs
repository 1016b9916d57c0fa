//! The images whose rows a run may name in place of token embeddings. Each image held gets ids of
//! its own past the vocabulary (n_vocab + row), and no other image is ever given them, even after it
//! is forgotten: two prompts' equal tokens are then always the same rows, so a cache's reuse of a
//! prompt's start is a comparison of tokens whether the prompt holds images or not, for one
//! conversation or for a server's slots alike.

use crate::vision::TokenGrid;
use crate::Error;
use std::collections::HashSet;
use std::ops::Range;

#[derive(Default)]
pub(super) struct ImageRows {
    /// The images held, the least recently used first.
    held: Vec<Held>,
    /// The first row that no image has been given.
    next: u32,
}

struct Held {
    /// What names the image's pixels (`Session`'s hash of them).
    key: u64,
    /// Its first row; its rows are the grid's tokens from there on.
    first: u32,
    grid: TokenGrid,
    /// The grid's tokens' rows, one after another.
    values: Vec<f32>,
}

impl Held {
    fn rows(&self) -> Range<u32> {
        self.first..self.first + self.grid.tokens()
    }
}

impl ImageRows {
    /// The rows of the image `key` names, where it is held; it becomes the most recently used.
    pub(super) fn find(&mut self, key: u64) -> Option<Range<u32>> {
        let i = self.held.iter().position(|h| h.key == key)?;
        let image = self.held.remove(i);
        let rows = image.rows();
        self.held.push(image);
        Some(rows)
    }

    /// Holds `values`, the rows of the image `key` names, whose tokens are `grid`'s, under rows
    /// no image had before (or those it holds already): returns them.
    pub(super) fn hold(
        &mut self,
        key: u64,
        grid: TokenGrid,
        values: Vec<f32>,
    ) -> Result<Range<u32>, Error> {
        if let Some(rows) = self.find(key) {
            return Ok(rows);
        }
        let Some(end) = self.next.checked_add(grid.tokens()) else {
            return Err(Error::Model(
                "this engine has given its images all the ids a token may have: load it again"
                    .into(),
            ));
        };
        self.held.push(Held {
            key,
            first: self.next,
            grid,
            values,
        });
        self.next = end;
        Ok(self.next - grid.tokens()..self.next)
    }

    /// The held image that `row` is a row of: its grid, its first row, and its rows' values.
    pub(super) fn image_of(&self, row: u32) -> Option<(TokenGrid, u32, &[f32])> {
        let image = self.held.iter().find(|h| h.rows().contains(&row))?;
        Some((image.grid, image.first, &image.values))
    }

    /// Forgets the images none of `named` (rows) is a row of, but for the `recent` most recently
    /// used of them.
    pub(super) fn forget_unnamed(&mut self, named: impl Iterator<Item = u32>, recent: usize) {
        let named: HashSet<u32> = named
            .filter_map(|row| self.image_of(row).map(|(_, first, _)| first))
            .collect();
        let mut unnamed_kept = 0;
        for i in (0..self.held.len()).rev() {
            if named.contains(&self.held[i].first) {
                continue;
            }
            match unnamed_kept < recent {
                true => unnamed_kept += 1,
                false => {
                    self.held.remove(i);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(tokens: u32) -> TokenGrid {
        TokenGrid {
            cols: tokens,
            rows: 1,
        }
    }

    #[test]
    fn an_image_keeps_its_rows_and_no_other_image_is_ever_given_them() {
        let mut images = ImageRows::default();
        assert_eq!(images.hold(7, grid(3), vec![0.0; 6]).unwrap(), 0..3);
        assert_eq!(images.hold(8, grid(2), vec![1.0; 4]).unwrap(), 3..5);
        assert_eq!(images.hold(7, grid(3), vec![9.0; 6]).unwrap(), 0..3);
        assert_eq!(images.find(8), Some(3..5));
        let (g, first, values) = images.image_of(4).unwrap();
        assert_eq!((g.tokens(), first, values), (2, 3, &[1.0; 4][..]));
        // 7 was used before 8: with nothing named and one kept, 7 goes.
        images.forget_unnamed(std::iter::empty(), 1);
        assert_eq!((images.find(7), images.find(8)), (None, Some(3..5)));
        assert!(images.image_of(0).is_none());
        // Held again, 7 gets rows of its own, never its old ones.
        assert_eq!(images.hold(7, grid(3), vec![0.0; 6]).unwrap(), 5..8);
    }

    #[test]
    fn named_images_stay_whatever_their_use() {
        let mut images = ImageRows::default();
        for key in 0..4 {
            images.hold(key, grid(2), vec![0.0; 2]).unwrap();
        }
        // Rows 1 and 4 name images 0 and 2, the least recently used; of 1 and 3, 3 is the recent.
        images.forget_unnamed([1, 4].into_iter(), 1);
        let held: Vec<bool> = (0..4).map(|k| images.find(k).is_some()).collect();
        assert_eq!(held, [true, false, true, true]);
        images.forget_unnamed(std::iter::empty(), 0);
        assert!((0..4).all(|k| images.find(k).is_none()));
    }
}

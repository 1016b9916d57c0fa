//! Images in a prompt: a vision projector attached to the session turns each image into rows the
//! model reads in place of token embeddings (`Engine::inject`), placed where the prompt's text has
//! llama.cpp mtmd's marker, between the projector's begin and end tokens (Gemma 3's
//! `<start_of_image>` and `<end_of_image>`, Gemma 4's `<|image>` and `<image|>`). An image's tokens
//! are as many as its projector makes of it: always the same for Gemma 3, by its size for Gemma 4.

use super::Session;
use crate::vision::{Image, Projector, IMAGE_MARKER};
use crate::Error;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::ops::Range;

/// An image of a prompt: a hash of its pixels, and the injected rows its tokens name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Placed {
    key: u64,
    rows: Range<u32>,
}

impl Session {
    /// Attaches the projector that reads this session's images (`Engine::attach_projector`).
    pub fn attach_projector(&mut self, projector: Projector) -> Result<(), Error> {
        self.engine.attach_projector(projector)
    }

    /// Whether a projector is attached.
    pub fn takes_images(&self) -> bool {
        self.engine.projector().is_some()
    }

    /// Whether `id` names the same rows in the prompt the cache holds as in the last prompt
    /// tokenized: any token of the vocabulary; an image's token where both prompts have the same
    /// image in its place.
    pub(super) fn same_rows(&self, id: u32) -> bool {
        let n_vocab = self.engine.n_vocab();
        if id < n_vocab {
            return true;
        }
        let row = id - n_vocab;
        let image = self
            .prompt_images
            .iter()
            .position(|p| p.rows.contains(&row));
        let cached = image.and_then(|i| self.cached_images.get(i));
        cached.is_some() && cached == image.and_then(|i| self.prompt_images.get(i))
    }

    /// Tokenizes the prompt `text` as `tokenize_prompt` does, with `images` in order at its markers
    /// (`IMAGE_MARKER`; where it has none, each image's marker goes before the text, as llama.cpp's
    /// mtmd-cli puts them): each image is encoded, its rows injected into the engine, and its
    /// tokens named by the ids past the vocabulary that stand for those rows.
    pub async fn tokenize_prompt_with_images(
        &mut self,
        text: &str,
        images: &[Image],
    ) -> Result<Vec<u32>, Error> {
        if images.is_empty() {
            self.prompt_images.clear();
            return Ok(self.tokenize_prompt(text));
        }
        let Some(projector) = self.engine.projector() else {
            return Err(Error::Model(
                "an image was given, but no vision projector is loaded for the model".into(),
            ));
        };
        let mut text = text.to_string();
        if !text.contains(IMAGE_MARKER) {
            text = IMAGE_MARKER.repeat(images.len()) + &text;
        }
        let markers = text.matches(IMAGE_MARKER).count();
        if markers != images.len() {
            return Err(Error::Model(format!(
                "the prompt has {markers} image markers ({IMAGE_MARKER}) for {} images",
                images.len()
            )));
        }
        let (begin, end) = projector.markers();
        let mut rows = Vec::new();
        let mut grids = Vec::new();
        let mut placed = Vec::new();
        for image in images {
            let key = Encoded::key(image);
            let first = placed.last().map_or(0, |p: &Placed| p.rows.end);
            let grid = projector.token_grid(image)?;
            grids.push(grid);
            let count = grid.tokens();
            placed.push(Placed {
                key,
                rows: first..first + count,
            });
            let encoded = match self.encoded.get(key) {
                Some(known) => known.clone(),
                None => {
                    let made = projector.encode(image).await?;
                    self.encoded.keep(key, made.clone());
                    made
                }
            };
            rows.extend(encoded);
        }
        let wrapped = text.replace(IMAGE_MARKER, &format!("{begin}{IMAGE_MARKER}{end}"));
        let mut tokens = self.tokenize_prompt("");
        let n_vocab = self.engine.n_vocab();
        for (i, piece) in wrapped.split(IMAGE_MARKER).enumerate() {
            if let Some(image) = i.checked_sub(1).map(|i| &placed[i]) {
                tokens.extend(n_vocab + image.rows.start..n_vocab + image.rows.end);
            }
            tokens.extend(self.tokenizer.encode(piece, true));
        }
        self.prompt_images = placed;
        self.engine.inject(rows, &grids)?;
        Ok(tokens)
    }
}

/// The rows of the images encoded last, so that a chat's every turn does not encode its images
/// again: a few, by a hash of their pixels.
#[derive(Default)]
pub(super) struct Encoded {
    rows: VecDeque<(u64, Vec<f32>)>,
}

impl Encoded {
    /// Images kept.
    const KEPT: usize = 8;

    fn key(image: &Image) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        image.hash(&mut h);
        h.finish()
    }

    fn get(&self, key: u64) -> Option<&Vec<f32>> {
        self.rows
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, rows)| rows)
    }

    fn keep(&mut self, key: u64, rows: Vec<f32>) {
        if self.rows.len() == Self::KEPT {
            self.rows.pop_front();
        }
        self.rows.push_back((key, rows));
    }
}

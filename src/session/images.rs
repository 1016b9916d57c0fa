//! Images in a prompt: a vision projector attached to the session turns each image into rows the
//! model reads in place of token embeddings (`Engine::hold_image`), placed where the prompt's text has
//! llama.cpp mtmd's marker, between the projector's begin and end tokens (Gemma 3's
//! `<start_of_image>` and `<end_of_image>`, Gemma 4's `<|image>` and `<image|>`). An image's tokens
//! are as many as its projector makes of it: always the same for Gemma 3, by its size for Gemma 4.

use super::Session;
use crate::vision::{Image, Projector, IMAGE_MARKER};
use crate::Error;
use std::hash::{Hash, Hasher};

impl Session {
    /// Attaches the projector that reads this session's images (`Engine::attach_projector`).
    pub fn attach_projector(&mut self, projector: Projector) -> Result<(), Error> {
        self.engine.attach_projector(projector)
    }

    /// Whether a projector is attached.
    pub fn takes_images(&self) -> bool {
        self.engine.projector().is_some()
    }

    /// Tokenizes the prompt `text` as `tokenize_prompt` does, with `images` in order at its markers
    /// (`IMAGE_MARKER`; where it has none, each image's marker goes before the text, as llama.cpp's
    /// mtmd-cli puts them): each image the engine does not hold already is encoded and held
    /// (`Engine::hold_image`), and its tokens are the ids that name its rows.
    pub async fn tokenize_prompt_with_images(
        &mut self,
        text: &str,
        images: &[Image],
    ) -> Result<Vec<u32>, Error> {
        if images.is_empty() {
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
        let mut placed = Vec::with_capacity(images.len());
        for image in images {
            let key = image_key(image);
            let ids = match self.engine.held_image(key) {
                Some(ids) => ids,
                None => {
                    let projector = self.engine.projector().expect("a projector");
                    let grid = projector.token_grid(image)?;
                    let rows = projector.encode(image).await?;
                    self.engine.hold_image(key, grid, rows)?
                }
            };
            placed.push(ids);
        }
        let wrapped = text.replace(IMAGE_MARKER, &format!("{begin}{IMAGE_MARKER}{end}"));
        let mut tokens = self.tokenize_prompt("");
        for (i, piece) in wrapped.split(IMAGE_MARKER).enumerate() {
            if let Some(ids) = i.checked_sub(1).map(|i| &placed[i]) {
                tokens.extend(ids.clone());
            }
            tokens.extend(self.tokenizer.encode(piece, true));
        }
        Ok(tokens)
    }
}

/// What names an image's pixels: a hash of them.
fn image_key(image: &Image) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    image.hash(&mut h);
    h.finish()
}

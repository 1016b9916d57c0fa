//! Images in a prompt: a vision projector attached to the session turns each image into rows the
//! model reads in place of token embeddings (`Engine::inject`), placed where the prompt's text has
//! llama.cpp mtmd's marker, between the projector's begin and end tokens (Gemma 3's
//! `<start_of_image>` and `<end_of_image>`).

use super::Session;
use crate::vision::{Image, Projector};
use crate::Error;

/// Where an image goes in a prompt's text (llama.cpp mtmd's default marker).
pub const IMAGE_MARKER: &str = "<__media__>";

impl Session {
    /// Attaches the projector that reads this session's images; refused where its rows are not the
    /// model's embedding width.
    pub fn attach_projector(&mut self, projector: Projector) -> Result<(), Error> {
        let model = self.engine.header.architecture().unwrap_or("the model");
        match self.engine.injected_width() {
            None => Err(Error::Model(format!(
                "{model} takes no images here (loaded one token at a time, or not a model images feed)"
            ))),
            Some(width) if width != projector.width() => Err(Error::Model(format!(
                "the projector makes rows of {}, but {model}'s embeddings are {width} wide: it was made for another model",
                projector.width()
            ))),
            Some(_) => {
                self.projector = Some(projector);
                Ok(())
            }
        }
    }

    /// Whether a projector is attached.
    pub fn takes_images(&self) -> bool {
        self.projector.is_some()
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
            return Ok(self.tokenize_prompt(text));
        }
        let Some(projector) = &self.projector else {
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
        for image in images {
            rows.extend(projector.encode(image).await?);
        }
        let per_image = projector.tokens_per_image();
        let wrapped = text.replace(IMAGE_MARKER, &format!("{begin}{IMAGE_MARKER}{end}"));
        let mut tokens = self.tokenize_prompt("");
        let mut next_row = self.engine.n_vocab();
        for (i, piece) in wrapped.split(IMAGE_MARKER).enumerate() {
            if i > 0 {
                tokens.extend(next_row..next_row + per_image);
                next_row += per_image;
            }
            tokens.extend(self.tokenizer.encode(piece, true));
        }
        self.engine.inject(rows)?;
        Ok(tokens)
    }
}

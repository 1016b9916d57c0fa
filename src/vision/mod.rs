//! Images for vision-language models: a projector file (an mmproj GGUF, llama.cpp's `clip`
//! architecture) loaded beside the text model turns an image into rows the text model reads in place
//! of token embeddings. Gemma 3's projector (siglip.rs) is the one Wick runs; preprocessing
//! (preprocess.rs) makes an image what its encoder reads, as llama.cpp's mtmd does. Decoding image
//! files is the caller's: the engine takes pixels.

pub mod preprocess;
pub mod siglip;

use crate::gguf::{ByteSource, Header};
use crate::gpu::Gpu;
use crate::models::Loader;
use crate::Error;
use std::sync::Arc;

/// Where an image goes in a prompt's text (llama.cpp mtmd's default marker).
pub const IMAGE_MARKER: &str = "<__media__>";

/// The projector types Wick runs (clip.projector_type).
pub const PROJECTORS: &[&str] = &["gemma3"];

/// An image as 8-bit RGB, row by row from the top, 3 bytes a pixel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

impl Image {
    /// Checks that `rgb` holds `width` x `height` pixels.
    pub fn new(width: u32, height: u32, rgb: Vec<u8>) -> Result<Image, Error> {
        if width == 0 || height == 0 || rgb.len() as u64 != width as u64 * height as u64 * 3 {
            return Err(Error::Model(format!(
                "an image of {width} x {height} pixels needs {} bytes of RGB, not {}",
                width as u64 * height as u64 * 3,
                rgb.len()
            )));
        }
        Ok(Image { width, height, rgb })
    }
}

/// A loaded vision projector.
pub struct Projector {
    gpu: Arc<Gpu>,
    encoder: siglip::Siglip,
}

impl Projector {
    /// Loads the projector file whose header is `header` onto `gpu`, reporting bytes read of all.
    pub async fn load(
        gpu: Arc<Gpu>,
        header: &Header,
        source: &dyn ByteSource,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Projector, Error> {
        let arch = header.architecture().unwrap_or_default();
        if arch != "clip" {
            return Err(Error::Model(format!(
                "a vision projector is an mmproj file (architecture \"clip\"), not {arch:?}"
            )));
        }
        let has_vision = header
            .get("clip.has_vision_encoder")
            .and_then(|v| v.as_bool());
        if has_vision != Some(true) {
            return Err(Error::Model(
                "the projector file has no vision encoder (clip.has_vision_encoder)".into(),
            ));
        }
        let kind = ["clip.vision.projector_type", "clip.projector_type"]
            .iter()
            .find_map(|k| header.get(k).and_then(|v| v.as_str()))
            .unwrap_or_default();
        if !PROJECTORS.contains(&kind) {
            return Err(Error::Model(format!(
                "vision projector type {kind:?} is not supported (Wick runs: {})",
                PROJECTORS.join(", ")
            )));
        }
        let mut l = Loader::new(gpu.clone(), header, source, progress)?;
        let encoder = siglip::Siglip::load(&mut l).await?;
        l.fill().await?;
        Ok(Projector { gpu, encoder })
    }

    /// Tokens each image becomes, read from the projector file's header alone: what a text model's
    /// prompt runs must hold (an image is never cut across runs).
    pub fn tokens_in(header: &Header) -> Result<u32, Error> {
        let meta = crate::models::Meta::new(header)?;
        Ok(siglip::Config::from_meta(&meta)?.n_tokens())
    }

    /// Tokens each image becomes in the text model's input.
    pub fn tokens_per_image(&self) -> u32 {
        self.encoder.config.n_tokens()
    }

    /// The width of those tokens: the text model's embedding width it was made for.
    pub fn width(&self) -> u32 {
        self.encoder.config.n_embd_text
    }

    /// The text around an image's tokens in the prompt, as llama.cpp's mtmd puts it for the
    /// projector's type: before them and after them.
    pub fn markers(&self) -> (&'static str, &'static str) {
        // Gemma 3 is the one type loaded (`PROJECTORS`).
        ("<start_of_image>", "<end_of_image>")
    }

    /// Its plans, for tuning their kernel shapes with the model's (`Engine::attach_projector`).
    pub(crate) fn plans(&self) -> [&crate::gpu::Plan; 2] {
        self.encoder.plans()
    }

    pub(crate) fn plans_mut(&mut self) -> [&mut crate::gpu::Plan; 2] {
        self.encoder.plans_mut()
    }

    /// The image's tokens, `tokens_per_image` rows of `width` values.
    pub async fn encode(&self, image: &Image) -> Result<Vec<f32>, Error> {
        self.encoder.encode(&self.gpu, image).await
    }
}

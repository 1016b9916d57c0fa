//! Images for vision-language models: a projector file (an mmproj GGUF, llama.cpp's `clip`
//! architecture) loaded beside the text model turns an image into rows the text model reads in place
//! of token embeddings. Wick runs Gemma 3's projector (siglip.rs: a fixed square, 256 tokens an image),
//! Gemma 4's (gemma4v.rs: a size near the image's own, 70 to 1120 tokens) and Qwen3.5's (qwen3vl.rs:
//! a size near the image's own, 8 to 4096 tokens, which the text model rotates by their place in the
//! image's grid); preprocessing
//! (preprocess.rs) makes an image what its encoder reads, as llama.cpp's mtmd does. Decoding image
//! files is the caller's: the engine takes pixels.

mod block;
pub mod gemma4v;
pub mod preprocess;
pub mod qwen3vl;
pub mod siglip;
mod tower;
mod weights;

use crate::gguf::{ByteSource, Header};
use crate::gpu::{Gpu, Plan, StepInput};
use crate::models::{Loader, Meta};
use crate::Error;
use std::sync::Arc;

/// Where an image goes in a prompt's text (llama.cpp mtmd's default marker).
pub const IMAGE_MARKER: &str = "<__media__>";

/// The projector types Wick runs (clip.projector_type).
pub const PROJECTORS: &[&str] = &["gemma3", "gemma4v", "qwen3vl_merger"];

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

/// How many tokens an image may become, where the projector sizes images to their own (Gemma 4's;
/// llama.cpp's `--image-min-tokens` and `--image-max-tokens`): None keeps the projector's own bounds
/// (Gemma 4's 70 and 1120, Qwen3.5's 8 and 4096). Fewer tokens encode faster, and the encoder, made for the largest image, takes
/// less GPU memory. Gemma 3's projector makes 256 tokens of every image and reads neither.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenBudget {
    pub min_tokens: Option<u32>,
    pub max_tokens: Option<u32>,
}

/// An image's tokens as the text model reads them: `rows` rows of `cols`, row by row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenGrid {
    pub cols: u32,
    pub rows: u32,
}

impl TokenGrid {
    pub fn tokens(self) -> u32 {
        self.cols * self.rows
    }
}

/// A loaded vision projector.
pub struct Projector {
    gpu: Arc<Gpu>,
    encoder: Encoder,
}

/// The projector types' encoders.
enum Encoder {
    Gemma3(siglip::Siglip),
    Gemma4(gemma4v::Gemma4v),
    Qwen3vl(qwen3vl::Qwen3vl),
}

/// The projector type the file names, among `PROJECTORS`.
fn projector_type(header: &Header) -> Result<&str, Error> {
    let kind = ["clip.vision.projector_type", "clip.projector_type"]
        .iter()
        .find_map(|k| header.get(k).and_then(|v| v.as_str()))
        .unwrap_or_default();
    match PROJECTORS.contains(&kind) {
        true => Ok(kind),
        false => Err(Error::Model(format!(
            "vision projector type {kind:?} is not supported (Wick runs: {})",
            PROJECTORS.join(", ")
        ))),
    }
}

/// The least and most tokens an image may become: the budget's where it gives them, else the
/// projector's own `(least, most)` (a most below the projector's least lowers the least with it).
fn token_bounds(budget: TokenBudget, (least, most): (u32, u32)) -> Result<(u32, u32), Error> {
    let most = budget.max_tokens.unwrap_or(most);
    let least = budget.min_tokens.unwrap_or(least.min(most));
    if least == 0 || most == 0 || least > most {
        return Err(Error::Model(format!(
            "vision projector: images of {least} to {most} tokens: the least must be 1 or more and at most the most"
        )));
    }
    Ok((least, most))
}

/// Refuses a projector file that has any of `not_run`: tensors llama.cpp would read for the projector
/// type `kind` that the encoder here does not run, refused rather than left unread.
fn refuse_unread(header: &Header, not_run: &[&str], kind: &str) -> Result<(), Error> {
    match not_run.iter().find(|n| header.tensor(n).is_some()) {
        Some(name) => Err(Error::Model(format!(
            "vision projector: tensor {name} is not supported for {kind}"
        ))),
        None => Ok(()),
    }
}

/// The most tokens an image may become on `gpu`: `most`, lowered to what one binding holds where each
/// token's widest activation takes `per_token` bytes; refused where that is fewer than `least`.
fn tokens_that_fit(gpu: &Gpu, (least, most): (u32, u32), per_token: u64) -> Result<u32, Error> {
    let fits = (gpu.max_binding() / per_token).min(u32::MAX as u64) as u32;
    if fits < least {
        return Err(Error::Model(format!(
            "vision projector: the adapter's buffers hold images of {fits} tokens, fewer than the {least} an image makes at least"
        )));
    }
    Ok(most.min(fits))
}

/// The size `image` is scaled to by a projector that sizes images near their own, each token `side`
/// pixels a side: each side a whole number of tokens, `least` to `most` tokens in all.
fn size_in_tokens(
    image: &Image,
    side: u32,
    (least, most): (u32, u32),
) -> Result<(u32, u32), Error> {
    let area = (side as u64).pow(2);
    let pixels = (least as u64 * area, most as u64 * area);
    let (w, h) = preprocess::size_preserving_ratio((image.width, image.height), side, pixels);
    let tokens = (w / side) * (h / side);
    if tokens > most {
        // Scaled up to the least, each side rounded up: past the most where they are near.
        return Err(Error::Model(format!(
            "an image of {} x {} pixels makes {tokens} tokens, more than the {most} the projector takes",
            image.width, image.height
        )));
    }
    Ok((w, h))
}

/// An encoder's two plans and what they read and write, made for its largest image: the plan over an
/// image's patches (each a token of its run) and the head's over its tokens, each with its input, the
/// buffer the patches' values go in and the one the tokens' rows of `width` come out of.
struct Runs {
    patch_step: StepInput,
    plan: Plan,
    token_step: StepInput,
    head: Plan,
    patches: wgpu::Buffer,
    tokens: (wgpu::Buffer, u32),
}

impl Runs {
    fn plans(&self) -> [&Plan; 2] {
        [&self.plan, &self.head]
    }

    fn plans_mut(&mut self) -> [&mut Plan; 2] {
        [&mut self.plan, &mut self.head]
    }

    /// One image: its patches' values (`padded_rows` of them) written, the plan over its `n` patches
    /// and the head's over its `m` tokens recorded into one pass and submitted once, and the head's
    /// `m` rows read back.
    async fn run(&self, gpu: &Gpu, values: &[f32], (n, m): (u32, u32)) -> Result<Vec<f32>, Error> {
        self.patch_step.write(gpu, 0, &vec![0; n as usize]);
        self.token_step.write(gpu, 0, &vec![0; m as usize]);
        gpu.queue
            .write_buffer(&self.patches, 0, bytemuck::cast_slice(values));
        let mut enc = gpu.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            self.plan.record(&mut pass, n);
            self.head.record(&mut pass, m);
        }
        gpu.queue.submit([enc.finish()]);
        let (tokens, width) = &self.tokens;
        let len = m as usize * *width as usize;
        Ok(crate::gpu::read_back_f32(gpu, tokens, len).await?)
    }
}

impl Projector {
    /// Loads the projector file whose header is `header` onto `gpu`, reporting bytes read of all.
    pub async fn load(
        gpu: Arc<Gpu>,
        (header, source): (&Header, &dyn ByteSource),
        budget: TokenBudget,
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
        let kind = projector_type(header)?;
        let mut l = Loader::new(gpu.clone(), header, source, progress)?;
        let encoder = match kind {
            "gemma3" => Encoder::Gemma3(siglip::Siglip::load(&mut l).await?),
            "gemma4v" => Encoder::Gemma4(gemma4v::Gemma4v::load(&mut l, budget).await?),
            _ => Encoder::Qwen3vl(qwen3vl::Qwen3vl::load(&mut l, budget).await?),
        };
        l.fill().await?;
        Ok(Projector { gpu, encoder })
    }

    /// The most tokens an image becomes, read from the projector file's header alone: what a text
    /// model's prompt runs must hold (an image is never cut across runs).
    pub fn max_tokens_in(header: &Header, budget: TokenBudget) -> Result<u32, Error> {
        let meta = Meta::new(header)?;
        match projector_type(header)? {
            "gemma3" => Ok(siglip::Config::from_meta(&meta)?.n_tokens()),
            "gemma4v" => Ok(gemma4v::Config::from_meta(&meta, budget)?.max_tokens),
            _ => Ok(qwen3vl::Config::from_meta(&meta, budget)?.max_tokens),
        }
    }

    /// The grid of tokens `image` becomes in the text model's input; an error where the projector
    /// cannot take it.
    pub fn token_grid(&self, image: &Image) -> Result<TokenGrid, Error> {
        match &self.encoder {
            Encoder::Gemma3(e) => Ok(e.config.token_grid()),
            Encoder::Gemma4(e) => e.config.grid_for(image),
            Encoder::Qwen3vl(e) => e.config.grid_for(image),
        }
    }

    /// The most tokens an image becomes.
    pub fn max_tokens(&self) -> u32 {
        match &self.encoder {
            Encoder::Gemma3(e) => e.config.n_tokens(),
            Encoder::Gemma4(e) => e.config.max_tokens,
            Encoder::Qwen3vl(e) => e.config.max_tokens,
        }
    }

    /// The width of those tokens: the text model's embedding width it was made for.
    pub fn width(&self) -> u32 {
        match &self.encoder {
            Encoder::Gemma3(e) => e.config.n_embd_text,
            Encoder::Gemma4(e) => e.config.n_embd_text,
            Encoder::Qwen3vl(e) => e.config.n_embd_text,
        }
    }

    /// Whether the text model must rotate the image's tokens by their place in its grid
    /// (multimodal RoPE, Qwen's), rather than as text at their positions.
    pub fn turns_by_grid(&self) -> bool {
        matches!(self.encoder, Encoder::Qwen3vl(_))
    }

    /// The text around an image's tokens in the prompt, as llama.cpp's mtmd puts it for the
    /// projector's type: before them and after them.
    pub fn markers(&self) -> (&'static str, &'static str) {
        match &self.encoder {
            Encoder::Gemma3(_) => ("<start_of_image>", "<end_of_image>"),
            Encoder::Gemma4(_) => ("<|image>", "<image|>"),
            Encoder::Qwen3vl(_) => ("<|vision_start|>", "<|vision_end|>"),
        }
    }

    /// Its plans, for tuning their kernel shapes with the model's (`Engine::attach_projector`).
    pub(crate) fn plans(&self) -> [&Plan; 2] {
        match &self.encoder {
            Encoder::Gemma3(e) => e.runs.plans(),
            Encoder::Gemma4(e) => e.runs.plans(),
            Encoder::Qwen3vl(e) => e.runs.plans(),
        }
    }

    pub(crate) fn plans_mut(&mut self) -> [&mut Plan; 2] {
        match &mut self.encoder {
            Encoder::Gemma3(e) => e.runs.plans_mut(),
            Encoder::Gemma4(e) => e.runs.plans_mut(),
            Encoder::Qwen3vl(e) => e.runs.plans_mut(),
        }
    }

    /// The image's tokens, `token_grid(image)`'s count of rows of `width` values.
    pub async fn encode(&self, image: &Image) -> Result<Vec<f32>, Error> {
        match &self.encoder {
            Encoder::Gemma3(e) => e.encode(&self.gpu, image).await,
            Encoder::Gemma4(e) => e.encode(&self.gpu, image).await,
            Encoder::Qwen3vl(e) => e.encode(&self.gpu, image).await,
        }
    }
}

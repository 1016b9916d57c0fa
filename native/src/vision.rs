//! `--mmproj`: a vision projector loaded beside the model; and image files and bytes decoded into
//! the pixels it reads.

use crate::load::{open_source, progress_bar};
use anyhow::{bail, Context, Result};
use clap::Args;
use pollster::FutureExt as _;
use wick::engine::LoadOptions;
use wick::gguf::read_header;
use wick::session::Session;
use wick::vision::{Image, Projector, TokenBudget};

#[derive(Args, Clone, Default)]
pub struct ProjectorArgs {
    /// A vision projector for the model (an mmproj GGUF, as llama.cpp's): a path or an http(s) URL
    #[arg(long = "mmproj")]
    pub mmproj: Option<String>,
    /// The fewest tokens an image becomes, where the projector sizes images to their own (Gemma 4's,
    /// Qwen3.5's) [default: the projector's, 70 or 8]
    #[arg(long = "image-min-tokens", value_name = "N")]
    pub image_min_tokens: Option<u32>,
    /// The most tokens an image becomes, where the projector sizes images to their own (Gemma 4's,
    /// Qwen3.5's): fewer encode faster in less GPU memory [default: the projector's, 1120 or 4096]
    #[arg(long = "image-max-tokens", value_name = "N")]
    pub image_max_tokens: Option<u32>,
}

impl ProjectorArgs {
    fn budget(&self) -> TokenBudget {
        TokenBudget {
            min_tokens: self.image_min_tokens,
            max_tokens: self.image_max_tokens,
        }
    }

    /// The load options with prompt runs long enough to hold an image whole, where a projector is
    /// named (its header is read for how many tokens an image makes); `asked`, the runs' length
    /// the user asked for (-b).
    pub fn options(&self, options: LoadOptions, asked: Option<u32>) -> Result<LoadOptions> {
        let Some(path) = &self.mmproj else {
            return Ok(options);
        };
        let source = open_source(&Some(path.clone()))?;
        let header = read_header(source.as_ref()).block_on()?;
        let tokens = Projector::max_tokens_in(&header, self.budget())
            .with_context(|| format!("cannot read {path}"))?;
        if let Some(batch) = asked.filter(|&b| b < tokens) {
            bail!("an image is {tokens} tokens, more than prompt runs of {batch} (-b) can hold");
        }
        Ok(LoadOptions {
            batch: asked,
            min_batch: tokens,
            ..options
        })
    }

    /// Loads the projector (where one is named) onto the session's GPU and attaches it.
    pub fn attach(&self, session: &mut Session) -> Result<()> {
        let Some(path) = &self.mmproj else {
            return Ok(());
        };
        let source = open_source(&Some(path.clone()))?;
        let header = read_header(source.as_ref()).block_on()?;
        let bar = progress_bar("loading the projector");
        let gpu = session.engine.gpu.clone();
        let file = (&header, source.as_ref());
        let projector = Projector::load(gpu, file, self.budget(), &mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        })
        .block_on();
        bar.finish_and_clear();
        let projector = projector.with_context(|| format!("cannot load {path}"))?;
        eprintln!(
            "wick: vision projector {path}: {} tokens an image at most",
            projector.max_tokens()
        );
        session.attach_projector(projector)?;
        // Its products' kernel shapes are timed as the model's are, once.
        crate::tuning_file::tune_new_shapes(&mut session.engine)
    }
}

/// Image files decoded (`--image`), where the projector `projector` names reads them.
pub fn read_images(paths: &[String], projector: &ProjectorArgs) -> Result<Vec<Image>> {
    if !paths.is_empty() && projector.mmproj.is_none() {
        bail!("--image needs a vision projector for the model (--mmproj)");
    }
    paths.iter().map(|p| read_image(p)).collect()
}

/// An image file decoded to RGB.
pub fn read_image(path: &str) -> Result<Image> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {path}"))?;
    decode_image(&bytes).with_context(|| format!("cannot decode the image {path}"))
}

/// Image bytes (PNG, JPEG, WebP or GIF) decoded to RGB.
pub fn decode_image(bytes: &[u8]) -> Result<Image> {
    let decoded = image::load_from_memory(bytes)?.to_rgb8();
    let (width, height) = decoded.dimensions();
    Ok(Image::new(width, height, decoded.into_raw())?)
}

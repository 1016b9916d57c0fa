//! Gemma 3's vision projector as llama.cpp runs it: a SigLIP encoder (patches embedded by a strided
//! convolution, learned positions, pre-norm blocks of LayerNorm, biased bidirectional attention and an
//! ungated GELU MLP, a final LayerNorm), then the grid of patches averaged in squares, RMS-normed and
//! projected to the text model's width. All of it is one plan, one submit per image. Attention over
//! the image's thousands of patches runs in tiles (`attention::push_tiled`).
//!
//! The kernels take rows in 32-weight chunks, and SigLIP's widths are not all multiples of 32 (a patch
//! is 3 x 14 x 14 = 588 values, the MLP 4304 wide): such matrices are padded with zero columns (and
//! the MLP's up with zero rows, whose GELU is 0) once at load.

use super::block;
use super::preprocess::{self, Resample};
use super::tower::Tower;
use super::weights::{layer_norm_weights, transposed};
use super::Image;
use crate::gpu::{scratch_buffer, storage_buffer, Gpu, Plan, StepInput};
use crate::models::{Loader, Meta};
use crate::ops::avg_pool::{self, Affine};
use crate::ops::bias::{self, Rows};
use crate::ops::{add_position, layer_norm, matvec, rms_norm};
use crate::Error;

/// The projector's hyperparameters, from its clip.vision.* metadata.
#[derive(Clone, Debug)]
pub struct Config {
    pub image_size: u32,
    /// Its patches, widths and layers.
    pub tower: Tower,
    /// The side of the squares the patch grid is averaged in.
    pub merge: u32,
    /// The text model's width, the projection's rows.
    pub n_embd_text: u32,
}

impl Config {
    pub fn from_meta(m: &Meta) -> Result<Config, Error> {
        let bad = |why: String| Error::Model(format!("vision projector: {why}"));
        let c = Config {
            image_size: m.meta_u32("vision.image_size")?,
            tower: Tower::from_meta(m)?,
            merge: m.meta_u32_or("vision.projector.scale_factor", 4)?,
            n_embd_text: match m.header.tensor("mm.input_projection.weight") {
                Some(t) => t.dims[0] as u32,
                None => return Err(bad("tensor mm.input_projection.weight is missing".into())),
            },
        };
        let side = c.image_size / c.tower.patch_size;
        if !c.image_size.is_multiple_of(c.tower.patch_size) {
            return Err(bad(format!(
                "{} pixels do not make whole patches of {}",
                c.image_size, c.tower.patch_size
            )));
        }
        if c.merge == 0 || !side.is_multiple_of(c.merge) {
            return Err(bad(format!(
                "a grid of {side} patches a side does not pool in squares of {}",
                c.merge
            )));
        }
        c.tower.check_widths(c.n_embd_text)?;
        Ok(c)
    }

    /// Patches a side of the grid.
    fn side(&self) -> u32 {
        self.image_size / self.tower.patch_size
    }

    pub fn n_patches(&self) -> u32 {
        self.side() * self.side()
    }

    /// Tokens an image becomes.
    pub fn n_tokens(&self) -> u32 {
        self.token_grid().tokens()
    }

    /// The square of tokens every image becomes.
    pub fn token_grid(&self) -> super::TokenGrid {
        let side = self.side() / self.merge;
        super::TokenGrid {
            cols: side,
            rows: side,
        }
    }
}

/// The loaded projector: its plan, and the buffers an image goes in and its tokens come out of.
pub struct Siglip {
    pub config: Config,
    /// The encoder over the image's patches and the pooling; the pooled grid's norm and projection.
    pub(super) runs: super::Runs,
}

impl Siglip {
    /// Loads the weights and builds the plan. The caller fills the loader.
    pub async fn load(l: &mut Loader<'_>) -> Result<Siglip, Error> {
        let c = Config::from_meta(l)?;
        let gpu = l.gpu.clone();
        let d = c.tower.n_embd;
        let n_ff = c.tower.n_ff_padded();
        let patch_embd = c.tower.patch_embedding(l).await?;
        let patch_bias = l.vector("v.patch_embd.bias", d).await?;
        let positions = l
            .vectors("v.position_embd.weight", d, c.n_patches())
            .await?;
        let mut layers = Vec::new();
        for i in 0..c.tower.n_layer {
            layers.push(block::Layer::load(l, i, d, (c.tower.n_ff, n_ff)).await?);
        }
        let post_ln = layer_norm_weights(l, "v.post_ln", d).await?;
        let soft_emb_norm = l.vector("mm.soft_emb_norm.weight", d).await?;
        let projection = transposed(l, "mm.input_projection.weight", d, c.n_embd_text).await?;

        let n = c.n_patches();
        let rows = |width: u32| n as u64 * width as u64 * 4;
        let scratch = |label: &'static str, bytes: u64| {
            let gpu = gpu.clone();
            async move { scratch_buffer(&gpu, label, bytes).await }
        };
        let patches = scratch("vision patches", rows(c.tower.patch_len())).await?;
        let block_rows = block::BlockRows::new(&gpu, n, d, n_ff, d).await?;
        let (x, xn, ones) = (&block_rows.x, &block_rows.xn, &block_rows.ones);
        let pooled = scratch("vision pooled", rows(d)).await?;
        let pooled_n = scratch("vision pooled normed", rows(d)).await?;
        let tokens = scratch(
            "vision tokens",
            c.n_tokens() as u64 * c.n_embd_text as u64 * 4,
        )
        .await?;
        let zeros = storage_buffer(&gpu, "vision zeros", &vec![0u8; d as usize * 4]);
        let side = c.side();
        let grid = storage_buffer(&gpu, "vision grid", bytemuck::cast_slice(&[side, side, 1]));

        // Every patch is a token of one run, at positions 0..n: the learned positions are read by
        // position, and attention sees the whole run both ways.
        let patch_step = StepInput::new(&gpu, n);
        let mut plan = Plan::new(&gpu, &patch_step, n);
        matvec::push(&mut plan, &patch_embd, &patches, x, false);
        bias::push(&mut plan, &patch_bias, Rows::One, x, d);
        add_position::push(&mut plan, (&positions, true), x, d);
        let shape = block::Shape::of(&c.tower);
        for layer in &layers {
            block::push(&mut plan, layer, &block_rows, shape, None);
        }
        plan.layer_boundary();
        layer_norm::push_apart(&mut plan, x, (&post_ln.0, &post_ln.1), xn, d, c.tower.eps);
        let mean = Affine {
            mul: 1.0,
            sub: &zeros,
            scale: ones,
        };
        avg_pool::push(&mut plan, (xn, &grid, c.merge), mean, &pooled, d);
        plan.finish(&gpu).await?;
        let m = c.n_tokens();
        let token_step = StepInput::new(&gpu, m);
        let mut head = Plan::new(&gpu, &token_step, m);
        rms_norm::push(
            &mut head,
            &pooled,
            &soft_emb_norm,
            &pooled_n,
            d,
            c.tower.eps,
        );
        matvec::push(&mut head, &projection, &pooled_n, &tokens, false);
        head.finish(&gpu).await?;
        let runs = super::Runs {
            patch_step,
            plan,
            token_step,
            head,
            patches,
            tokens: (tokens, c.n_embd_text),
        };
        Ok(Siglip { config: c, runs })
    }

    /// The image's tokens, (n_tokens, n_embd_text) row-major: scaled into the encoder's square,
    /// encoded and projected.
    pub async fn encode(&self, gpu: &Gpu, image: &Image) -> Result<Vec<f32>, Error> {
        let c = &self.config;
        let size = (c.image_size, c.image_size);
        let square = preprocess::fit(image, size, Resample::Bilinear);
        let values = preprocess::patches(&square, c.tower.patch_size, c.tower.mean, c.tower.std);
        let per_patch = 3 * c.tower.patch_size * c.tower.patch_size;
        let padded = preprocess::padded_rows(&values, per_patch, c.tower.patch_len());
        let (n, m) = (c.n_patches(), c.n_tokens());
        self.runs.run(gpu, &padded, (n, m)).await
    }
}

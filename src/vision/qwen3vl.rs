//! Qwen3.5's vision projector as llama.cpp runs it (mtmd's qwen3vl): an image scaled to a size near
//! its own (8 to 4096 tokens, each 2 x 2 patches), embedded by patches (a convolution over two
//! frames of the same image, so the sum of its two kernels) with a learned square of positions
//! resized to the image's grid, then pre-norm blocks of LayerNorm, biased attention both ways whose
//! queries and keys are rotated by row in one quarter of each head's pairs and by column in the
//! next, and an ungated MLP; a final LayerNorm, then each 2 x 2 square of patches concatenated into
//! one row and projected to the text model's width by two layers with a GELU between.
//!
//! The patches go in the order of their squares (`preprocess::in_squares`, shaders/grid.wgsl's
//! `merge`), as llama.cpp orders them, so that a square's four rows are one row of the projection's
//! input as they lie. The text model rotates the tokens by their place in the grid of squares
//! (multimodal RoPE: `Engine::segments`).
//!
//! Qwen3-VL's deepstack features (rows of some layers merged and projected beside the last's) are
//! not run: Qwen3.5's files have none.

use super::block;
use super::preprocess::{self, Resample};
use super::tower::Tower;
use super::weights::{biased, layer_norm_weights, summed};
use super::{Image, TokenBudget, TokenGrid};
use crate::gpu::{scratch_buffer, storage_buffer, Gpu, Plan, StepInput};
use crate::models::{Loader, Meta};
use crate::ops::bias::{self, Rows};
use crate::ops::glu::{self, Activation};
use crate::ops::vision_grid::{self, Rotation};
use crate::ops::{layer_norm, matvec};
use crate::Error;

/// The base of the rotation's frequencies.
const ROPE_THETA: f32 = 10000.0;
/// Tokens an image becomes, at least and at most, as mtmd bounds them unless told otherwise.
const MIN_TOKENS: u32 = 8;
const MAX_TOKENS: u32 = 4096;
/// The side of the squares of patches that become tokens: the only one llama.cpp's graph takes.
const MERGE: u32 = 2;

/// The projector's hyperparameters, from its clip.vision.* metadata and tensors.
#[derive(Clone, Debug)]
pub struct Config {
    /// Its patches, widths and layers (the projection's activation is GELU whatever the file says,
    /// as llama.cpp runs it).
    pub tower: Tower,
    /// The text model's width, the projection's rows.
    pub n_embd_text: u32,
    /// The learned positions' square: side x side rows.
    pub side: u32,
    /// Tokens an image is scaled up to where it makes fewer: mtmd's 8, or the budget's.
    pub min_tokens: u32,
    /// Tokens an image becomes at most: mtmd's 4096 or the budget's, or fewer where the adapter
    /// cannot hold the activations of that many.
    pub max_tokens: u32,
}

impl Config {
    pub fn from_meta(m: &Meta, budget: TokenBudget) -> Result<Config, Error> {
        let bad = |why: String| Error::Model(format!("vision projector: {why}"));
        let dims = |name: &str| match m.header.tensor(name) {
            Some(t) => Ok(t.dims.clone()),
            None => Err(bad(format!("tensor {name} is missing"))),
        };
        let tower = Tower::from_meta(m)?;
        let n_embd = tower.n_embd;
        let positions = dims("v.position_embd.weight")?;
        let side = (positions.get(1).copied().unwrap_or(0) as f64).sqrt() as u32;
        if positions.len() != 2
            || positions[0] != n_embd as u64
            || side as u64 * side as u64 != positions[1]
        {
            return Err(bad(format!(
                "tensor v.position_embd.weight has shape {positions:?}, not [{n_embd}, a square]"
            )));
        }
        let merge = m.meta_u32_or("vision.spatial_merge_size", MERGE)?;
        if merge != MERGE {
            return Err(bad(format!(
                "squares of {merge} x {merge} patches: qwen3vl takes 2 x 2"
            )));
        }
        // llama.cpp finds a layer's deepstack merger by its tensors (v.deepstack.N.*).
        if m.header
            .tensors
            .iter()
            .any(|t| t.name.starts_with("v.deepstack."))
        {
            return Err(bad(
                "deepstack layers (Qwen3-VL's) are not supported; Qwen3.5's projector has none"
                    .into(),
            ));
        }
        let (min_tokens, max_tokens) = super::token_bounds(budget, (MIN_TOKENS, MAX_TOKENS))?;
        let c = Config {
            tower,
            n_embd_text: dims("mm.2.bias")?.first().copied().unwrap_or(0) as u32,
            side,
            min_tokens,
            max_tokens,
        };
        if side == 0 {
            return Err(bad("the position table must not be empty".into()));
        }
        c.tower.check_widths(c.n_embd_text)?;
        Ok(c)
    }

    /// Pixels a side of one token: a square of 2 x 2 patches.
    fn token_side(&self) -> u32 {
        self.tower.patch_size * MERGE
    }

    /// The size an image is scaled to, in pixels, each side a whole number of tokens.
    pub fn size_for(&self, image: &Image) -> Result<(u32, u32), Error> {
        let bounds = (self.min_tokens, self.max_tokens);
        super::size_in_tokens(image, self.token_side(), bounds)
    }

    /// The grid of tokens `image` becomes.
    pub fn grid_for(&self, image: &Image) -> Result<TokenGrid, Error> {
        let (w, h) = self.size_for(image)?;
        Ok(TokenGrid {
            cols: w / self.token_side(),
            rows: h / self.token_side(),
        })
    }

    /// The widest row an activation has per patch: the MLP's (padded to 32), the patches', or the
    /// projection's (a token's four patches' width, or the text model's, over four patches).
    fn widest(&self) -> u32 {
        let n_ff = self.tower.n_ff_padded();
        let text = self.n_embd_text.div_ceil(MERGE * MERGE);
        n_ff.max(self.tower.patch_len())
            .max(self.tower.n_embd)
            .max(text)
    }
}

/// Tensors llama.cpp would read for this projector type that the encoder here does not run.
const NOT_RUN: &[&str] = &["v.pre_ln.weight", "v.blk.0.ffn_gate.weight"];

/// The loaded projector: its plans, and the buffers an image goes in and its tokens come out of.
pub struct Qwen3vl {
    pub config: Config,
    /// The encoder over the image's patches and the final norm; the projection of each square of
    /// four patches, a token.
    pub(super) runs: super::Runs,
    /// { cols, rows, merge }: the image's grid of patches, in squares.
    grid: wgpu::Buffer,
}

impl Qwen3vl {
    /// Loads the weights and builds the plans. The caller fills the loader.
    pub async fn load(l: &mut Loader<'_>, budget: TokenBudget) -> Result<Qwen3vl, Error> {
        let mut c = Config::from_meta(l, budget)?;
        super::refuse_unread(l.header, NOT_RUN, "qwen3vl")?;
        let gpu = l.gpu.clone();
        // The largest image's widest activation must fit a binding.
        let per_token = (MERGE * MERGE) as u64 * c.widest() as u64 * 4;
        c.max_tokens = super::tokens_that_fit(&gpu, (c.min_tokens, c.max_tokens), per_token)?;
        let (d, hd) = (c.tower.n_embd, c.tower.n_embd / c.tower.n_head);
        let n_ff = c.tower.n_ff_padded();
        let p = c.tower.patch_size;
        let frames = ["v.patch_embd.weight", "v.patch_embd.weight.1"];
        let patch_embd = summed(l, &frames, &[p, p, 3, d], c.tower.patch_len()).await?;
        let patch_bias = l.vector("v.patch_embd.bias", d).await?;
        let positions = l
            .vectors("v.position_embd.weight", d, c.side * c.side)
            .await?;
        let mut layers = Vec::new();
        for i in 0..c.tower.n_layer {
            layers.push(block::Layer::load(l, i, d, (c.tower.n_ff, n_ff)).await?);
        }
        let post_ln = layer_norm_weights(l, "v.post_ln", d).await?;
        let (wide, text) = (MERGE * MERGE * d, c.n_embd_text);
        let merger_in = biased(l, "mm.0", (wide, wide), (wide, wide)).await?;
        let merger_out = biased(l, "mm.2", (wide, text), (wide, text)).await?;

        let (n, m) = (c.max_tokens * MERGE * MERGE, c.max_tokens);
        let rows = |count: u32, width: u32| count as u64 * width as u64 * 4;
        let scratch = |label: &'static str, bytes: u64| {
            let gpu = gpu.clone();
            async move { scratch_buffer(&gpu, label, bytes).await }
        };
        let patches = scratch("vision patches", rows(n, c.tower.patch_len())).await?;
        let block_rows = block::BlockRows::new(&gpu, n, d, n_ff, wide).await?;
        let (x, xn, ones) = (&block_rows.x, &block_rows.xn, &block_rows.ones);
        let merged = scratch("vision merged", rows(m, wide)).await?;
        let merged_gelu = scratch("vision merged gelu", rows(m, wide)).await?;
        let tokens = scratch("vision tokens", rows(m, text)).await?;
        let freqs = vision_grid::rope_freqs(hd, ROPE_THETA);
        let freqs = storage_buffer(&gpu, "vision rope", bytemuck::cast_slice(&freqs));
        let grid = storage_buffer(&gpu, "vision grid", &[0u8; 12]);

        let patch_step = StepInput::new(&gpu, n);
        let mut plan = Plan::new(&gpu, &patch_step, n);
        matvec::push(&mut plan, &patch_embd, &patches, x, false);
        bias::push(&mut plan, &patch_bias, Rows::One, x, d);
        vision_grid::push_resized_positions(&mut plan, (&positions, c.side), &grid, x, d);
        let shape = block::Shape::of(&c.tower);
        let rotation = Some((Rotation::Across, &freqs, &grid));
        for layer in &layers {
            block::push(&mut plan, layer, &block_rows, shape, rotation);
        }
        plan.layer_boundary();
        layer_norm::push_apart(&mut plan, x, (&post_ln.0, &post_ln.1), xn, d, c.tower.eps);
        plan.finish(&gpu).await?;

        // xn's rows in squares of four are the tokens' rows of 4 d.
        let token_step = StepInput::new(&gpu, m);
        let mut head = Plan::new(&gpu, &token_step, m);
        block::product(&mut head, &merger_in, xn, &merged, false);
        let ungated = (ones, 0, 0);
        let gelu_tanh = Activation::GeluTanh;
        glu::push_rows(
            &mut head,
            gelu_tanh,
            (&merged, 0, wide),
            ungated,
            (&merged_gelu, wide),
        );
        block::product(&mut head, &merger_out, &merged_gelu, &tokens, false);
        head.finish(&gpu).await?;
        let runs = super::Runs {
            patch_step,
            plan,
            token_step,
            head,
            patches,
            tokens: (tokens, text),
        };
        Ok(Qwen3vl {
            config: c,
            runs,
            grid,
        })
    }

    /// The image's tokens, (tokens, n_embd_text) row-major, row by row of its grid of tokens.
    pub async fn encode(&self, gpu: &Gpu, image: &Image) -> Result<Vec<f32>, Error> {
        let c = &self.config;
        let (w, h) = c.size_for(image)?;
        let fitted = preprocess::fit(image, (w, h), Resample::Bicubic);
        let values = preprocess::patches(&fitted, c.tower.patch_size, c.tower.mean, c.tower.std);
        let (cols, rows) = (w / c.tower.patch_size, h / c.tower.patch_size);
        let per_patch = 3 * c.tower.patch_size * c.tower.patch_size;
        let squares = preprocess::in_squares(&values, per_patch, cols, MERGE);
        let padded = preprocess::padded_rows(&squares, per_patch, c.tower.patch_len());
        let (n, m) = (cols * rows, cols * rows / (MERGE * MERGE));
        gpu.queue
            .write_buffer(&self.grid, 0, bytemuck::cast_slice(&[cols, rows, MERGE]));
        self.runs.run(gpu, &padded, (n, m)).await
    }
}

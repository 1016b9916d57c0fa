//! Gemma 4's vision projector as llama.cpp runs it (mtmd's gemma4v): an image scaled to a size near
//! its own (70 to 1120 tokens, each 3 x 3 patches), embedded by patches with learned positions for
//! its columns and rows, then pre-norm blocks of RMSNorm, attention both ways whose queries and keys
//! are normed per head and rotated by column in one half of each head and by row in the other (its
//! values normed alone, its scores unscaled), a gated MLP (GELU as the file says), post-norms and a scale on each
//! layer's output; the grid averaged in 3 x 3 squares, scaled by sqrt(n_embd), standardized where
//! the file says, RMS-normed and projected to the text model's width. Its linear layers may clip
//! their inputs and outputs to bounds the file gives (Gemma 4's clippable linears).
//!
//! An image's size is known only when it comes, so the plans are made for the largest image and
//! each run records as many patches as the image has; the grid's size is written with its pixels
//! (shaders/grid.wgsl), and the kernels that need a patch's place read it there.

use super::preprocess::{self, Resample};
use super::tower::Tower;
use super::weights::padded;
use super::{Image, TokenBudget, TokenGrid};
use crate::gpu::{scratch_buffer, storage_buffer, Gpu, GpuTensor, KvType, Plan, StepInput};
use crate::models::{Loader, Meta};
use crate::ops::attention::{self, AttentionBuffers};
use crate::ops::avg_pool::{self, Affine};
use crate::ops::glu;
use crate::ops::vision_grid::{self, Heads, Rotation};
use crate::ops::{matvec, rms_norm};
use crate::Error;

/// The base of the rotation's frequencies.
const ROPE_THETA: f32 = 100.0;
/// Tokens an image becomes, at least and at most, as mtmd bounds them unless told otherwise
/// (`TokenBudget`).
const MIN_TOKENS: u32 = 70;
const MAX_TOKENS: u32 = 1120;

/// The projector's hyperparameters, from its clip.vision.* metadata and tensors.
#[derive(Clone, Debug)]
pub struct Config {
    /// Its patches, widths and layers (the activation its MLP's gate's).
    pub tower: Tower,
    /// The side of the squares the patch grid is averaged in.
    pub merge: u32,
    /// The text model's width, the projection's rows.
    pub n_embd_text: u32,
    /// Positions each axis's table holds: the most patches a side of the grid may have.
    pub positions: u32,
    /// Tokens an image is scaled up to where it makes fewer: mtmd's 70, or the budget's.
    pub min_tokens: u32,
    /// Tokens an image becomes at most: mtmd's 1120 or the budget's, or fewer where the adapter
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
        let projection = dims("mm.input_projection.weight")?;
        let positions = dims("v.position_embd.weight")?;
        if positions.len() != 3 || positions[0] != n_embd as u64 || positions[2] != 2 {
            return Err(bad(format!(
                "tensor v.position_embd.weight has shape {positions:?}, not [{n_embd}, positions, 2]"
            )));
        }
        let (min_tokens, max_tokens) = super::token_bounds(budget, (MIN_TOKENS, MAX_TOKENS))?;
        let c = Config {
            tower,
            merge: m.meta_u32_or("vision.projector.scale_factor", 3)?,
            n_embd_text: projection.get(1).copied().unwrap_or(0) as u32,
            positions: positions[1] as u32,
            min_tokens,
            max_tokens,
        };
        if projection.first() != Some(&(n_embd as u64)) {
            return Err(bad(format!(
                "tensor mm.input_projection.weight has shape {projection:?}, not [{n_embd}, text width]"
            )));
        }
        if c.merge == 0 {
            return Err(bad("pooling must not be empty".into()));
        }
        c.tower.check_widths(c.n_embd_text)?;
        Ok(c)
    }

    /// Pixels a side of one token: a square of merge x merge patches.
    fn token_side(&self) -> u32 {
        self.tower.patch_size * self.merge
    }

    /// The size an image is scaled to, in pixels, each side a whole number of tokens.
    pub fn size_for(&self, image: &Image) -> Result<(u32, u32), Error> {
        let bounds = (self.min_tokens, self.max_tokens);
        let (w, h) = super::size_in_tokens(image, self.token_side(), bounds)?;
        let (cols, rows) = (w / self.tower.patch_size, h / self.tower.patch_size);
        if cols > self.positions || rows > self.positions {
            return Err(Error::Model(format!(
                "an image of {} x {} pixels makes a grid of {cols} x {rows} patches, but the projector's positions reach {} a side",
                image.width, image.height, self.positions
            )));
        }
        Ok((w, h))
    }

    /// The grid of tokens `image` becomes.
    pub fn grid_for(&self, image: &Image) -> Result<TokenGrid, Error> {
        let (w, h) = self.size_for(image)?;
        Ok(TokenGrid {
            cols: w / self.token_side(),
            rows: h / self.token_side(),
        })
    }

    /// Patches of the largest image: the encoder's plan's rows.
    fn max_patches(&self) -> u32 {
        self.max_tokens * self.merge * self.merge
    }

    /// The widest row an activation has: the MLP's (padded to 32), the patches', or the width.
    fn widest(&self) -> u32 {
        let n_ff = self.tower.n_ff_padded();
        n_ff.max(self.tower.patch_len())
            .max(self.tower.n_embd)
            .max(self.n_embd_text)
    }
}

/// A linear layer whose input and output may be clipped to bounds.
struct Clipped {
    w: GpuTensor,
    input: Option<(f32, f32)>,
    output: Option<(f32, f32)>,
}

impl Clipped {
    /// `name`.weight of file shape (cols, rows), padded to (cols_to, rows_to), with the bounds
    /// `name`.input_min, .input_max, .output_min and .output_max where the file has them.
    async fn load(
        l: &mut Loader<'_>,
        name: &str,
        (cols, rows): (u32, u32),
        (cols_to, rows_to): (u32, u32),
    ) -> Result<Clipped, Error> {
        let w = padded(
            l,
            &format!("{name}.weight"),
            &[cols, rows],
            cols_to,
            rows_to,
        )
        .await?;
        let input = (
            bound(l, &format!("{name}.input_min")).await?,
            bound(l, &format!("{name}.input_max")).await?,
        );
        let output = (
            bound(l, &format!("{name}.output_min")).await?,
            bound(l, &format!("{name}.output_max")).await?,
        );
        let either = |(lo, hi): (Option<f32>, Option<f32>)| {
            (lo.is_some() || hi.is_some()).then(|| (lo.unwrap_or(f32::MIN), hi.unwrap_or(f32::MAX)))
        };
        Ok(Clipped {
            w,
            input: either(input),
            output: either(output),
        })
    }

    fn clips(&self) -> bool {
        self.input.is_some() || self.output.is_some()
    }

    /// Adds y = W clip(x), clipped. `scratch`: two buffers as wide as the widest row, for the
    /// clipped input and the unclipped output.
    fn push(
        &self,
        plan: &mut Plan,
        x: &wgpu::Buffer,
        y: &wgpu::Buffer,
        scratch: &[wgpu::Buffer; 2],
    ) {
        let x = match self.input {
            Some(bounds) => {
                vision_grid::push_clamp(plan, x, bounds, &scratch[0], self.w.row_len);
                &scratch[0]
            }
            None => x,
        };
        match self.output {
            Some(bounds) => {
                matvec::push(plan, &self.w, x, &scratch[1], false);
                vision_grid::push_clamp(plan, &scratch[1], bounds, y, self.w.rows);
            }
            None => matvec::push(plan, &self.w, x, y, false),
        }
    }
}

/// The one value of the tensor `name`, where the file has it.
async fn bound(l: &mut Loader<'_>, name: &str) -> Result<Option<f32>, Error> {
    match l.header.tensor(name).is_some() {
        true => Ok(Some(l.host_f32(name, &[1]).await?[0])),
        false => Ok(None),
    }
}

struct Layer {
    ln1: wgpu::Buffer,
    q: Clipped,
    k: Clipped,
    v: Clipped,
    q_norm: wgpu::Buffer,
    k_norm: wgpu::Buffer,
    out: Clipped,
    attn_post_norm: wgpu::Buffer,
    ln2: wgpu::Buffer,
    gate: Clipped,
    up: Clipped,
    down: Clipped,
    ffn_post_norm: wgpu::Buffer,
    out_scale: f32,
}

/// Tensors llama.cpp would read for this projector type that the encoder here does not run.
const NOT_RUN: &[&str] = &[
    "v.patch_embd.bias",
    "v.pre_ln.weight",
    "v.post_ln.weight",
    "v.blk.0.attn_q.bias",
    "v.blk.0.attn_k.bias",
    "v.blk.0.attn_v.bias",
    "v.blk.0.attn_out.bias",
    "v.blk.0.ffn_up.bias",
    "v.blk.0.ffn_down.bias",
    "v.blk.0.attn_qkv.weight",
];

/// The loaded projector: its plans, and the buffers an image goes in and its tokens come out of.
pub struct Gemma4v {
    pub config: Config,
    /// The encoder over the image's patches and the pooling; the pooled grid's norm and projection.
    pub(super) runs: super::Runs,
    /// { cols, rows, merge }: the image's grid of patches.
    grid: wgpu::Buffer,
}

impl Gemma4v {
    /// Loads the weights and builds the plans. The caller fills the loader.
    pub async fn load(l: &mut Loader<'_>, budget: TokenBudget) -> Result<Gemma4v, Error> {
        let mut c = Config::from_meta(l, budget)?;
        super::refuse_unread(l.header, NOT_RUN, "gemma4v")?;
        let gpu = l.gpu.clone();
        // The largest image's widest activation must fit a binding.
        let per_token = c.merge as u64 * c.merge as u64 * c.widest() as u64 * 4;
        c.max_tokens = super::tokens_that_fit(&gpu, (c.min_tokens, c.max_tokens), per_token)?;
        let (d, hd) = (c.tower.n_embd, c.tower.n_embd / c.tower.n_head);
        let n_ff = c.tower.n_ff_padded();
        let patch_embd = c.tower.patch_embedding(l).await?;
        let positions = {
            let name = "v.position_embd.weight";
            let shape: &[u32] = &[d, c.positions, 2];
            let len = 2 * c.positions as usize * d as usize;
            l.floats(name, &[(name, shape)], len, |mut read| read.remove(0))
                .await?
        };
        let mut layers = Vec::new();
        for i in 0..c.tower.n_layer {
            let name = |n: &str| format!("v.blk.{i}.{n}");
            let q = Clipped::load(l, &name("attn_q"), (d, d), (d, d)).await?;
            let k = Clipped::load(l, &name("attn_k"), (d, d), (d, d)).await?;
            let v = Clipped::load(l, &name("attn_v"), (d, d), (d, d)).await?;
            let out = Clipped::load(l, &name("attn_out"), (d, d), (d, d)).await?;
            let scale_name = name("out_scale.weight");
            let out_scale = bound(l, &scale_name).await?.unwrap_or(1.0);
            layers.push(Layer {
                ln1: l.vector(&name("ln1.weight"), d).await?,
                q,
                k,
                v,
                q_norm: l.vector(&name("attn_q_norm.weight"), hd).await?,
                k_norm: l.vector(&name("attn_k_norm.weight"), hd).await?,
                out,
                attn_post_norm: l.vector(&name("attn_post_norm.weight"), d).await?,
                ln2: l.vector(&name("ln2.weight"), d).await?,
                gate: Clipped::load(l, &name("ffn_gate"), (d, c.tower.n_ff), (d, n_ff)).await?,
                up: Clipped::load(l, &name("ffn_up"), (d, c.tower.n_ff), (d, n_ff)).await?,
                down: Clipped::load(l, &name("ffn_down"), (c.tower.n_ff, d), (n_ff, d)).await?,
                ffn_post_norm: l.vector(&name("ffn_post_norm.weight"), d).await?,
                out_scale,
            });
        }
        let std_bias = match l.header.tensor("v.std_bias").is_some() {
            true => Some(l.vector("v.std_bias", d).await?),
            false => None,
        };
        let std_scale = match l.header.tensor("v.std_scale").is_some() {
            true => Some(l.vector("v.std_scale", d).await?),
            false => None,
        };
        let text = c.n_embd_text;
        let projection = Clipped::load(l, "mm.input_projection", (d, text), (d, text)).await?;

        let (n, m) = (c.max_patches(), c.max_tokens);
        let rows = |count: u32, width: u32| count as u64 * width as u64 * 4;
        let scratch = |label: &'static str, bytes: u64| {
            let gpu = gpu.clone();
            async move { scratch_buffer(&gpu, label, bytes).await }
        };
        let patches = scratch("vision patches", rows(n, c.tower.patch_len())).await?;
        let x = scratch("vision x", rows(n, d)).await?;
        let xn = scratch("vision xn", rows(n, d)).await?;
        let q = scratch("vision q", rows(n, d)).await?;
        let k = scratch("vision k", rows(n, d)).await?;
        let v = scratch("vision v", rows(n, d)).await?;
        let attn = scratch("vision attention", rows(n, d)).await?;
        let t = scratch("vision sublayer", rows(n, d)).await?;
        let gate = scratch("vision gate", rows(n, n_ff)).await?;
        let up = scratch("vision up", rows(n, n_ff)).await?;
        let hidden = scratch("vision mlp", rows(n, n_ff)).await?;
        let pooled = scratch("vision pooled", rows(m, d)).await?;
        let pooled_n = scratch("vision pooled normed", rows(m, d)).await?;
        let tokens = scratch("vision tokens", rows(m, text)).await?;
        let clips = layers.iter().any(|l| {
            [&l.q, &l.k, &l.v, &l.out, &l.gate, &l.up, &l.down]
                .iter()
                .any(|w| w.clips())
        }) || projection.clips();
        // Only layers that clip use the scratch; otherwise it is a token buffer that nothing reads.
        let clip_rows = if clips { rows(n, c.widest()) } else { 16 };
        let clip = [
            scratch("vision clipped input", clip_rows).await?,
            scratch("vision unclipped output", clip_rows).await?,
        ];
        let ones = storage_buffer(
            &gpu,
            "vision ones",
            bytemuck::cast_slice(&vec![1f32; d as usize]),
        );
        let zeros = storage_buffer(&gpu, "vision zeros", &vec![0u8; d as usize * 4]);
        let freqs = vision_grid::rope_freqs(hd, ROPE_THETA);
        let freqs = storage_buffer(&gpu, "vision rope", bytemuck::cast_slice(&freqs));
        let grid = storage_buffer(&gpu, "vision grid", &[0u8; 12]);

        let patch_step = StepInput::new(&gpu, n);
        let mut plan = Plan::new(&gpu, &patch_step, n);
        matvec::push(&mut plan, &patch_embd, &patches, &x, false);
        vision_grid::push_positions(&mut plan, (&positions, c.positions), &grid, &x, d);
        let heads = Heads {
            n_head: c.tower.n_head,
            head_dim: hd,
            eps: c.tower.eps,
        };
        let rotation = Some((Rotation::Halves, &freqs, &grid));
        let shape = attention::Shape {
            causal: false,
            scale: 1.0,
            ..attention::Shape::causal(c.tower.n_head, c.tower.n_head, hd)
        };
        rms_norm::push(&mut plan, &x, &layers[0].ln1, &xn, d, c.tower.eps);
        for (i, layer) in layers.iter().enumerate() {
            plan.begin_layer("vision");
            layer.q.push(&mut plan, &xn, &q, &clip);
            vision_grid::push_head_norm_rope(&mut plan, &q, heads, Some(&layer.q_norm), rotation);
            layer.k.push(&mut plan, &xn, &k, &clip);
            vision_grid::push_head_norm_rope(&mut plan, &k, heads, Some(&layer.k_norm), rotation);
            layer.v.push(&mut plan, &xn, &v, &clip);
            vision_grid::push_head_norm_rope(&mut plan, &v, heads, Some(&ones), None);
            let buffers = AttentionBuffers {
                q: &q,
                k_cache: &k,
                v_cache: &v,
                cache_type: KvType::F32,
                out: &attn,
                sinks: None,
            };
            attention::push_tiled(&mut plan, shape, &buffers);
            layer.out.push(&mut plan, &attn, &t, &clip);
            let post = (&t, &layer.attn_post_norm);
            rms_norm::push_add_norm(&mut plan, post, &x, (&layer.ln2, &xn), d, c.tower.eps);
            layer.gate.push(&mut plan, &xn, &gate, &clip);
            layer.up.push(&mut plan, &xn, &up, &clip);
            let act = c.tower.activation;
            glu::push_rows(
                &mut plan,
                act,
                (&gate, 0, n_ff),
                (&up, 0, n_ff),
                (&hidden, n_ff),
            );
            layer.down.push(&mut plan, &hidden, &t, &clip);
            // The next layer's input norm, made with the sum; after the last, a norm nothing reads.
            let next = layers.get(i + 1).map_or(&ones, |l| &l.ln1);
            let post = (&t, &layer.ffn_post_norm);
            let out = (&x, layer.out_scale);
            rms_norm::push_add_scale_norm(&mut plan, post, out, (next, &xn), d, c.tower.eps);
        }
        plan.layer_boundary();
        let standardize = Affine {
            mul: (d as f32).sqrt(),
            sub: std_bias.as_ref().unwrap_or(&zeros),
            scale: std_scale.as_ref().unwrap_or(&ones),
        };
        avg_pool::push(&mut plan, (&x, &grid, c.merge), standardize, &pooled, d);
        plan.finish(&gpu).await?;

        let token_step = StepInput::new(&gpu, m);
        let mut head = Plan::new(&gpu, &token_step, m);
        rms_norm::push(&mut head, &pooled, &ones, &pooled_n, d, c.tower.eps);
        projection.push(&mut head, &pooled_n, &tokens, &clip);
        head.finish(&gpu).await?;
        let runs = super::Runs {
            patch_step,
            plan,
            token_step,
            head,
            patches,
            tokens: (tokens, text),
        };
        Ok(Gemma4v {
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
        // The encoder reads each value v as 2 v - 1.
        let values: Vec<f32> = values.iter().map(|v| 2.0 * v - 1.0).collect();
        let per_patch = 3 * c.tower.patch_size * c.tower.patch_size;
        let padded = preprocess::padded_rows(&values, per_patch, c.tower.patch_len());
        let (cols, rows) = (w / c.tower.patch_size, h / c.tower.patch_size);
        let (n, m) = (cols * rows, cols * rows / (c.merge * c.merge));
        gpu.queue
            .write_buffer(&self.grid, 0, bytemuck::cast_slice(&[cols, rows, 1]));
        self.runs.run(gpu, &padded, (n, m)).await
    }
}

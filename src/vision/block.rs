//! The pre-norm block Gemma 3's SigLIP and Qwen3.5's vision tower share: a LayerNorm, biased q, k
//! and v (Qwen's q and k then turned by their patch's place in the grid), attention both ways, the
//! biased output added to the residual; a LayerNorm, a biased ungated MLP, added.

use super::tower::Tower;
use super::weights::{biased, layer_norm_weights, split_biased};
use crate::gpu::{scratch_buffer, storage_buffer, Gpu, GpuTensor, KvType, Plan};
use crate::models::Loader;
use crate::ops::attention::{self, AttentionBuffers};
use crate::ops::glu::{self, Activation};
use crate::ops::vision_grid::{self, Heads, Rotation};
use crate::ops::{layer_norm, matvec};
use crate::Error;

/// A matrix and its bias.
pub type Biased = (GpuTensor, wgpu::Buffer);

pub struct Layer {
    ln1: (wgpu::Buffer, wgpu::Buffer),
    q: Biased,
    k: Biased,
    v: Biased,
    out: Biased,
    ln2: (wgpu::Buffer, wgpu::Buffer),
    up: Biased,
    down: Biased,
}

impl Layer {
    /// Layer `i` of a tower `d` wide with an MLP of `n_ff` (padded to `n_ff_to`): q, k and v from
    /// attn_qkv where the file fuses them (Qwen's), else from attn_q, attn_k and attn_v.
    pub async fn load(
        l: &mut Loader<'_>,
        i: u32,
        d: u32,
        (n_ff, n_ff_to): (u32, u32),
    ) -> Result<Layer, Error> {
        let name = |n: &str| format!("v.blk.{i}.{n}");
        let (q, k, v) = match l.header.tensor(&name("attn_qkv.weight")) {
            Some(_) => {
                let mut qkv = split_biased(l, &name("attn_qkv"), (d, d), 3).await?;
                let (v, k) = (qkv.pop().unwrap(), qkv.pop().unwrap());
                (qkv.pop().unwrap(), k, v)
            }
            None => (
                biased(l, &name("attn_q"), (d, d), (d, d)).await?,
                biased(l, &name("attn_k"), (d, d), (d, d)).await?,
                biased(l, &name("attn_v"), (d, d), (d, d)).await?,
            ),
        };
        Ok(Layer {
            ln1: layer_norm_weights(l, &name("ln1"), d).await?,
            q,
            k,
            v,
            out: biased(l, &name("attn_out"), (d, d), (d, d)).await?,
            ln2: layer_norm_weights(l, &name("ln2"), d).await?,
            up: biased(l, &name("ffn_up"), (d, n_ff), (d, n_ff_to)).await?,
            down: biased(l, &name("ffn_down"), (n_ff, d), (n_ff_to, d)).await?,
        })
    }
}

/// The rows a block reads and writes, a row per patch: the residual `x`, its norm `xn`, q, k, v,
/// the attention's output, the MLP's hidden rows before and after the activation, and a row of ones
/// at least as wide as the MLP (the ungated activation's other factor).
pub struct BlockRows {
    pub x: wgpu::Buffer,
    pub xn: wgpu::Buffer,
    pub q: wgpu::Buffer,
    pub k: wgpu::Buffer,
    pub v: wgpu::Buffer,
    pub attn: wgpu::Buffer,
    pub hidden: wgpu::Buffer,
    pub activated: wgpu::Buffer,
    pub ones: wgpu::Buffer,
}

impl BlockRows {
    /// Rows for `n` patches of a tower `d` wide whose MLP is `n_ff` wide (padded), and ones as
    /// many as `ones` (the MLP's width or more, where the caller's other activations are wider).
    pub async fn new(gpu: &Gpu, n: u32, d: u32, n_ff: u32, ones: u32) -> Result<BlockRows, Error> {
        let scratch = |label: &'static str, width: u32| {
            scratch_buffer(gpu, label, n as u64 * width as u64 * 4)
        };
        Ok(BlockRows {
            x: scratch("vision x", d).await?,
            xn: scratch("vision xn", d).await?,
            q: scratch("vision q", d).await?,
            k: scratch("vision k", d).await?,
            v: scratch("vision v", d).await?,
            attn: scratch("vision attention", d).await?,
            hidden: scratch("vision mlp", n_ff).await?,
            activated: scratch("vision activated", n_ff).await?,
            ones: storage_buffer(
                gpu,
                "vision ones",
                bytemuck::cast_slice(&vec![1f32; ones.max(n_ff) as usize]),
            ),
        })
    }
}

/// A tower's shape as its blocks run it.
#[derive(Clone, Copy)]
pub struct Shape {
    pub heads: Heads,
    /// The MLP's width, padded to the kernels' 32.
    pub n_ff: u32,
    pub activation: Activation,
}

impl Shape {
    pub fn of(tower: &Tower) -> Shape {
        Shape {
            heads: Heads {
                n_head: tower.n_head,
                head_dim: tower.n_embd / tower.n_head,
                eps: tower.eps,
            },
            n_ff: tower.n_ff_padded(),
            activation: tower.activation,
        }
    }
}

/// Adds y = W x + b (y += W x + b where `accumulate`).
pub fn product(
    plan: &mut Plan,
    (w, b): &Biased,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
    accumulate: bool,
) {
    matvec::push_biased(plan, w, x, (y, accumulate), b);
}

/// Adds the block `layer` over the run's patches; where `rotation` is given (its frequencies and
/// the grid), q and k are turned by it before attention.
pub fn push(
    plan: &mut Plan,
    layer: &Layer,
    a: &BlockRows,
    s: Shape,
    rotation: Option<(Rotation, &wgpu::Buffer, &wgpu::Buffer)>,
) {
    let Heads {
        n_head,
        head_dim,
        eps,
    } = s.heads;
    let d = n_head * head_dim;
    plan.begin_layer("vision");
    layer_norm::push_apart(plan, &a.x, (&layer.ln1.0, &layer.ln1.1), &a.xn, d, eps);
    product(plan, &layer.q, &a.xn, &a.q, false);
    product(plan, &layer.k, &a.xn, &a.k, false);
    if rotation.is_some() {
        vision_grid::push_head_norm_rope(plan, &a.q, s.heads, None, rotation);
        vision_grid::push_head_norm_rope(plan, &a.k, s.heads, None, rotation);
    }
    product(plan, &layer.v, &a.xn, &a.v, false);
    let shape = attention::Shape {
        causal: false,
        ..attention::Shape::causal(n_head, n_head, head_dim)
    };
    let buffers = AttentionBuffers {
        q: &a.q,
        k_cache: &a.k,
        v_cache: &a.v,
        cache_type: KvType::F32,
        out: &a.attn,
        sinks: None,
    };
    attention::push_tiled(plan, shape, &buffers);
    product(plan, &layer.out, &a.attn, &a.x, true);
    layer_norm::push_apart(plan, &a.x, (&layer.ln2.0, &layer.ln2.1), &a.xn, d, eps);
    product(plan, &layer.up, &a.xn, &a.hidden, false);
    let ungated = (&a.ones, 0, 0);
    glu::push_rows(
        plan,
        s.activation,
        (&a.hidden, 0, s.n_ff),
        ungated,
        (&a.activated, s.n_ff),
    );
    product(plan, &layer.down, &a.activated, &a.x, true);
}

//! The llama architecture (Llama 2/3, SmolLM2, TinyLlama, Mistral): RMSNorm, RoPE, grouped-query
//! attention, SwiGLU feed-forward, tied or separate output head.

use super::{Ends, Forward, Loader};
use crate::gpu::{scratch_buffer, GpuTensor, Plan, Stacked, StepInput};
use crate::ops::rope::Rope;
use crate::ops::swiglu::{self, GateUp};
use crate::ops::{attention, embed, matvec, rms_norm, rope_kv};
use crate::Error;

/// Hyperparameters, from GGUF metadata.
#[derive(Clone, Debug)]
pub struct Config {
    pub n_embd: u32,
    pub n_layer: u32,
    pub n_ff: u32,
    pub n_head: u32,
    pub n_kv_head: u32,
    pub head_dim: u32,
    pub n_vocab: u32,
    pub rms_eps: f32,
    pub rope: Rope,
    /// The context length the model was trained for.
    pub n_ctx_train: u32,
}

impl Config {
    pub fn from_loader(l: &Loader) -> Result<Config, Error> {
        let n_embd = l.meta_u32("embedding_length")?;
        let n_head = l.meta_u32("attention.head_count")?;
        let n_kv_head = l.meta_u32_or("attention.head_count_kv", n_head)?;
        if n_head == 0 || n_kv_head == 0 || n_head % n_kv_head != 0 {
            return Err(Error::Model(format!(
                "{n_head} heads cannot share {n_kv_head} kv heads"
            )));
        }
        let head_dim = l.meta_u32_or("attention.key_length", n_embd / n_head)?;
        let n_vocab = l
            .header
            .tensor("token_embd.weight")
            .map(|t| t.rows() as u32)
            .unwrap_or(0);
        let scaling = l.meta_str("rope.scaling.type").unwrap_or("none");
        let freq_scale = match scaling {
            "linear" => 1.0 / l.meta_f32_or("rope.scaling.factor", 1.0)?,
            "none" => 1.0,
            other => {
                return Err(Error::Model(format!(
                    "rope scaling {other:?} is not supported for llama"
                )))
            }
        };
        Ok(Config {
            n_embd,
            n_layer: l.meta_u32("block_count")?,
            n_ff: l.meta_u32("feed_forward_length")?,
            n_head,
            n_kv_head,
            head_dim,
            n_vocab,
            rms_eps: l.meta_f32_or("attention.layer_norm_rms_epsilon", 1e-5)?,
            rope: Rope {
                n_rot: l.meta_u32_or("rope.dimension_count", head_dim)?,
                freq_base: l.meta_f32_or("rope.freq_base", 10000.0)?,
                freq_scale,
                neox: false,
                yarn: None,
            },
            n_ctx_train: l.meta_u32_or("context_length", 4096)?,
        })
    }
}

/// One transformer block's weights, named as in GGUF.
struct Block {
    attn_norm: wgpu::Buffer, // (n_embd)
    attn_qkv: Stacked,       // attn_q, attn_k, attn_v: ((n_head + 2 n_kv_head) head_dim, n_embd)
    attn_output: GpuTensor,  // (n_embd, n_head * head_dim)
    ffn_norm: wgpu::Buffer,  // (n_embd)
    ffn_gate_up: GateUp,     // ffn_gate, ffn_up: (2 n_ff, n_embd)
    ffn_down: GpuTensor,     // (n_embd, n_ff)
    k_cache: wgpu::Buffer,   // (n_ctx, n_kv_head, head_dim)
    v_cache: wgpu::Buffer,   // (n_ctx, n_kv_head, head_dim)
}

/// From this position on, a decode step splits attention over the sequence into `ATTENTION_SPLITS`
/// (each split still has 64 keys or more per workgroup); before it, the extra merge dispatch costs
/// more than the idle GPU does.
const SPLIT_ATTENTION_FROM: u32 = 1024;
const ATTENTION_SPLITS: u32 = 16;

/// How a plan's attention runs.
enum Attention<'a> {
    /// A workgroup per head and token.
    Whole,
    /// One token, split over the sequence, through this scratch.
    Split(&'a wgpu::Buffer),
}

/// The activations a run works through, f32, each with one row per token of the largest run.
struct Activations {
    x: wgpu::Buffer,       // (batch, n_embd) the residual stream
    xn: wgpu::Buffer,      // (batch, n_embd) normed
    q: wgpu::Buffer,       // (batch, n_head * head_dim), rotated (k and v go to the cache)
    attn: wgpu::Buffer,    // (batch, n_head * head_dim)
    gate_up: wgpu::Buffer, // (batch, 2 n_ff), where gate and up are kept apart
    hidden: wgpu::Buffer,  // (batch, n_ff)
}

/// Loads the weights, allocates the cache and activations for `n_ctx` positions and prompt chunks of
/// `batch` tokens, and builds the decode and prefill plans.
pub async fn load(l: &mut Loader<'_>, n_ctx: u32, batch: u32) -> Result<Forward, Error> {
    let c = Config::from_loader(l)?;
    let (d, q_dim, kv_dim) = (c.n_embd, c.n_head * c.head_dim, c.n_kv_head * c.head_dim);
    if c.head_dim % 4 != 0 || c.head_dim > attention::MAX_HEAD_DIM {
        return Err(Error::Model(format!(
            "heads of {} dimensions are not supported (a multiple of 4, at most {})",
            c.head_dim,
            attention::MAX_HEAD_DIM
        )));
    }
    let gpu = l.gpu.clone();

    let ends = Ends::load(l, d, c.n_vocab).await?;
    let rope_freqs = match l.header.tensor("rope_freqs.weight") {
        Some(_) => Some(l.vector("rope_freqs.weight", c.rope.n_rot / 2).await?),
        None => None,
    };
    let mut blocks = Vec::with_capacity(c.n_layer as usize);
    for i in 0..c.n_layer {
        let name = |t: &str| format!("blk.{i}.{t}.weight");
        let names = |ts: &[&str]| ts.iter().map(|t| name(t)).collect::<Vec<_>>();
        let cache = (n_ctx as u64) * kv_dim as u64 * 4;
        blocks.push(Block {
            attn_norm: l.vector(&name("attn_norm"), d).await?,
            attn_qkv: l
                .stacked(
                    &names(&["attn_q", "attn_k", "attn_v"]),
                    d,
                    &[q_dim, kv_dim, kv_dim],
                )
                .await?,
            attn_output: l.matrix(&name("attn_output"), q_dim, d).await?,
            ffn_norm: l.vector(&name("ffn_norm"), d).await?,
            ffn_gate_up: l
                .gate_up([&name("ffn_gate"), &name("ffn_up")], d, c.n_ff)
                .await?,
            ffn_down: l.matrix(&name("ffn_down"), c.n_ff, d).await?,
            k_cache: scratch_buffer(&gpu, &format!("blk.{i}.k_cache"), cache).await?,
            v_cache: scratch_buffer(&gpu, &format!("blk.{i}.v_cache"), cache).await?,
        });
    }

    let rows =
        |label: &'static str, n: u32| scratch_buffer(&gpu, label, batch as u64 * n as u64 * 4);
    let a = Activations {
        x: rows("x", d).await?,
        xn: rows("xn", d).await?,
        q: rows("q", q_dim).await?,
        attn: rows("attn", q_dim).await?,
        gate_up: rows("gate_up", 2 * c.n_ff).await?,
        hidden: rows("hidden", c.n_ff).await?,
    };
    let logits = scratch_buffer(&gpu, "logits", c.n_vocab as u64 * 4).await?;
    let step = StepInput::new(&gpu, batch);

    let model = Model {
        c: &c,
        blocks: &blocks,
        rope_freqs: rope_freqs.as_ref(),
        ends: &ends,
        a: &a,
    };
    let decode_plan = |attention: Attention| {
        let mut plan = Plan::new(&gpu, &step, 1);
        model.push_layers(&mut plan, attention);
        ends.push_logits(&mut plan, &a.x, &a.xn, &logits, c.rms_eps);
        plan
    };
    let mut decode = decode_plan(Attention::Whole);
    decode.finish(&gpu).await?;
    let decode_long = match n_ctx > SPLIT_ATTENTION_FROM {
        false => None,
        true => {
            let bytes = attention::split_scratch_bytes(c.n_head, c.head_dim, ATTENTION_SPLITS);
            let parts = scratch_buffer(&gpu, "attention splits", bytes).await?;
            let mut plan = decode_plan(Attention::Split(&parts));
            plan.finish(&gpu).await?;
            Some((SPLIT_ATTENTION_FROM, plan))
        }
    };
    let prefill = match batch {
        1 => None,
        _ => {
            let mut plan = Plan::new(&gpu, &step, batch);
            model.push_layers(&mut plan, Attention::Whole);
            plan.finish(&gpu).await?;
            Some(plan)
        }
    };
    Ok(Forward {
        decode,
        decode_long,
        prefill,
        step,
        logits,
        n_vocab: c.n_vocab,
        n_ctx_train: c.n_ctx_train,
    })
}

/// What the plans are made of.
struct Model<'a> {
    c: &'a Config,
    blocks: &'a [Block],
    rope_freqs: Option<&'a wgpu::Buffer>,
    ends: &'a Ends,
    a: &'a Activations,
}

impl Model<'_> {
    /// The embedding lookup and every layer, for each token of the run.
    fn push_layers(&self, plan: &mut Plan, attention: Attention) {
        let (c, a, rope_freqs) = (self.c, self.a, self.rope_freqs);
        embed::push(plan, &self.ends.token_embd, &a.x);
        for b in self.blocks {
            plan.layer_boundary();
            rms_norm::push(plan, &a.x, &b.attn_norm, &a.xn, c.n_embd, c.rms_eps);
            let heads = rope_kv::Heads {
                n_head: c.n_head,
                n_kv_head: c.n_kv_head,
                head_dim: c.head_dim,
            };
            let outputs = rope_kv::RopeBuffers {
                q: &a.q,
                k_cache: &b.k_cache,
                v_cache: &b.v_cache,
                factors: rope_freqs,
            };
            rope_kv::push(plan, &b.attn_qkv, &a.xn, &c.rope, heads, &outputs);
            let attn_buffers = attention::AttentionBuffers {
                q: &a.q,
                k_cache: &b.k_cache,
                v_cache: &b.v_cache,
                out: &a.attn,
            };
            match attention {
                Attention::Whole => {
                    attention::push(plan, c.n_head, c.n_kv_head, c.head_dim, &attn_buffers)
                }
                Attention::Split(parts) => {
                    let heads = (c.n_head, c.n_kv_head, c.head_dim);
                    attention::push_split(plan, heads, ATTENTION_SPLITS, &attn_buffers, parts);
                }
            }
            matvec::push(plan, &b.attn_output, &a.attn, &a.x, true);
            rms_norm::push(plan, &a.x, &b.ffn_norm, &a.xn, c.n_embd, c.rms_eps);
            let ffn = (&b.ffn_gate_up, &b.ffn_down);
            swiglu::push_ffn(plan, ffn, &a.xn, (&a.gate_up, &a.hidden), &a.x);
        }
        plan.layer_boundary();
    }
}

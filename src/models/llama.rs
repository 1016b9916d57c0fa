//! The llama architecture (Llama 2/3, SmolLM2, TinyLlama, Mistral): RMSNorm, RoPE, grouped-query
//! attention, SwiGLU feed-forward, tied or separate output head.

use super::{Ends, Forward, Loader};
use crate::gpu::{scratch_buffer, storage_buffer, GpuTensor, Plan};
use crate::ops::rope::Rope;
use crate::ops::{attention, embed, matvec, rms_norm, rope_kv, swiglu};
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
    attn_q: GpuTensor,       // (n_head * head_dim, n_embd)
    attn_k: GpuTensor,       // (n_kv_head * head_dim, n_embd)
    attn_v: GpuTensor,       // (n_kv_head * head_dim, n_embd)
    attn_output: GpuTensor,  // (n_embd, n_head * head_dim)
    ffn_norm: wgpu::Buffer,  // (n_embd)
    ffn_gate: GpuTensor,     // (n_ff, n_embd)
    ffn_up: GpuTensor,       // (n_ff, n_embd)
    ffn_down: GpuTensor,     // (n_embd, n_ff)
    k_cache: wgpu::Buffer,   // (n_ctx, n_kv_head, head_dim)
    v_cache: wgpu::Buffer,   // (n_ctx, n_kv_head, head_dim)
}

/// Loads the weights, allocates the cache and activations for `n_ctx` positions, and builds the plan.
pub async fn load(l: &mut Loader<'_>, n_ctx: u32) -> Result<Forward, Error> {
    let c = Config::from_loader(l)?;
    let (d, q_dim, kv_dim) = (c.n_embd, c.n_head * c.head_dim, c.n_kv_head * c.head_dim);
    let gpu = l.gpu.clone();

    let ends = Ends::load(l, d, c.n_vocab).await?;
    let rope_freqs = match l.header.tensor("rope_freqs.weight") {
        Some(_) => Some(l.vector("rope_freqs.weight", c.rope.n_rot / 2).await?),
        None => None,
    };
    let mut blocks = Vec::with_capacity(c.n_layer as usize);
    for i in 0..c.n_layer {
        let name = |t: &str| format!("blk.{i}.{t}.weight");
        let cache = (n_ctx as u64) * kv_dim as u64 * 4;
        blocks.push(Block {
            attn_norm: l.vector(&name("attn_norm"), d).await?,
            attn_q: l.matrix(&name("attn_q"), d, q_dim).await?,
            attn_k: l.matrix(&name("attn_k"), d, kv_dim).await?,
            attn_v: l.matrix(&name("attn_v"), d, kv_dim).await?,
            attn_output: l.matrix(&name("attn_output"), q_dim, d).await?,
            ffn_norm: l.vector(&name("ffn_norm"), d).await?,
            ffn_gate: l.matrix(&name("ffn_gate"), d, c.n_ff).await?,
            ffn_up: l.matrix(&name("ffn_up"), d, c.n_ff).await?,
            ffn_down: l.matrix(&name("ffn_down"), c.n_ff, d).await?,
            k_cache: scratch_buffer(&gpu, &format!("blk.{i}.k_cache"), cache).await?,
            v_cache: scratch_buffer(&gpu, &format!("blk.{i}.v_cache"), cache).await?,
        });
    }

    // Activations, f32.
    let f32s = |label: &'static str, n: u32| scratch_buffer(&gpu, label, n as u64 * 4);
    let x = f32s("x", d).await?; // (n_embd) the residual stream
    let xn = f32s("xn", d).await?; // (n_embd) normed
    let q = f32s("q", q_dim).await?;
    let k = f32s("k", kv_dim).await?;
    let v = f32s("v", kv_dim).await?;
    let attn = f32s("attn", q_dim).await?;
    let scores = scratch_buffer(&gpu, "scores", c.n_head as u64 * n_ctx as u64 * 4).await?; // (n_head, n_ctx)
    let gate = f32s("gate", c.n_ff).await?;
    let up = f32s("up", c.n_ff).await?;
    let hidden = f32s("hidden", c.n_ff).await?;
    let logits = f32s("logits", c.n_vocab).await?;
    let step = storage_buffer(&gpu, "step", &[0u8; 8]); // { token, pos }

    let mut plan = Plan::new(&gpu);
    embed::push(&mut plan, &ends.token_embd, &step, &x);
    for b in &blocks {
        plan.layer_boundary();
        rms_norm::push(&mut plan, &x, &b.attn_norm, &xn, d, c.rms_eps);
        matvec::push(&mut plan, &b.attn_q, &xn, &q, false);
        matvec::push(&mut plan, &b.attn_k, &xn, &k, false);
        matvec::push(&mut plan, &b.attn_v, &xn, &v, false);
        let caches = rope_kv::RopeBuffers {
            q: &q,
            k: &k,
            v: &v,
            k_cache: &b.k_cache,
            v_cache: &b.v_cache,
            factors: rope_freqs.as_ref(),
            step: &step,
        };
        let heads = rope_kv::Heads {
            n_head: c.n_head,
            n_kv_head: c.n_kv_head,
            head_dim: c.head_dim,
        };
        rope_kv::push(&mut plan, &c.rope, heads, &caches);
        let attn_buffers = attention::AttentionBuffers {
            q: &q,
            k_cache: &b.k_cache,
            v_cache: &b.v_cache,
            scores: &scores,
            out: &attn,
            step: &step,
        };
        attention::push(
            &mut plan,
            c.n_head,
            c.n_kv_head,
            c.head_dim,
            n_ctx,
            &attn_buffers,
        );
        matvec::push(&mut plan, &b.attn_output, &attn, &x, true);
        rms_norm::push(&mut plan, &x, &b.ffn_norm, &xn, d, c.rms_eps);
        let ffn = (&b.ffn_gate, &b.ffn_up, &b.ffn_down);
        swiglu::push_ffn(&mut plan, ffn, &xn, (&gate, &up, &hidden), &x);
    }
    plan.layer_boundary();
    ends.push_logits(&mut plan, &x, &xn, &logits, c.rms_eps);
    plan.finish(&gpu).await?;
    Ok(Forward {
        plan,
        step,
        logits,
        n_vocab: c.n_vocab,
        n_ctx_train: c.n_ctx_train,
    })
}

//! The dense transformer block that llama, qwen2, gemma3 and qwen35 share: RMSNorm, a token mixer
//! (attention with RoPE over a grouped-query KV cache, or in Qwen3.5's recurrent layers Gated DeltaNet
//! linear attention over a fixed-size state), a gated feed-forward block, tied or separate output head.
//! What differs from family to family is named data, a `Family`, which each family's own file makes
//! from its metadata.

use super::linear_attention::DeltaNet;
use super::{Ends, Forward, Loader, Meta};
use crate::gpu::{scratch_buffer, storage_buffer, GpuTensor, Plan, Stacked, StepInput};
use crate::ops::glu::{self, Activation, GateUp};
use crate::ops::rope::{self, Rope};
use crate::ops::{
    attention, delta_net, embed, head_norm_rope_kv, matvec, rms_norm, rope_kv, sigmoid_gate,
    softcap,
};
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
    /// The rotation of a layer without one of its own.
    pub rope: Rope,
    /// The context length the model was trained for.
    pub n_ctx_train: u32,
    /// The tensor of per-pair RoPE frequency divisors, where the file has one (Llama 3's rope_freqs).
    pub rope_factors: Option<String>,
}

impl Config {
    pub fn from_meta(m: &Meta) -> Result<Config, Error> {
        let n_embd = m.meta_u32("embedding_length")?;
        let n_head = m.meta_u32("attention.head_count")?;
        let n_kv_head = m.meta_u32_or("attention.head_count_kv", n_head)?;
        if n_head == 0 || n_kv_head == 0 || n_head % n_kv_head != 0 {
            return Err(Error::Model(format!(
                "{n_head} heads cannot share {n_kv_head} kv heads"
            )));
        }
        let head_dim = m.meta_u32_or("attention.key_length", n_embd / n_head)?;
        if m.meta_u32_or("attention.value_length", head_dim)? != head_dim {
            return Err(Error::Model(
                "values and keys of different lengths are not supported".into(),
            ));
        }
        let n_vocab = m
            .header
            .tensor("token_embd.weight")
            .map(|t| t.rows() as u32)
            .unwrap_or(0);
        let scaling = m.meta_str("rope.scaling.type").unwrap_or("none");
        let freq_scale = match scaling {
            "linear" => 1.0 / m.meta_f32_or("rope.scaling.factor", 1.0)?,
            "none" => 1.0,
            other => {
                return Err(Error::Model(format!(
                    "rope scaling {other:?} is not supported for {}",
                    m.arch
                )))
            }
        };
        // Next-token-prediction layers (MTP) follow the model's own; they are not run.
        let n_layer = m.meta_u32("block_count")?;
        let n_mtp = m.meta_u32_or("nextn_predict_layers", 0)?;
        if n_mtp >= n_layer {
            return Err(Error::Model(format!(
                "{n_mtp} next-token-prediction layers leave none of the {n_layer} blocks to run"
            )));
        }
        Ok(Config {
            n_embd,
            n_layer: n_layer - n_mtp,
            n_ff: m.meta_u32("feed_forward_length")?,
            n_head,
            n_kv_head,
            head_dim,
            n_vocab,
            rms_eps: m.meta_f32_or("attention.layer_norm_rms_epsilon", 1e-5)?,
            rope: Rope {
                n_rot: m.meta_u32_or("rope.dimension_count", head_dim)?,
                freq_base: m.meta_f32_or("rope.freq_base", 10000.0)?,
                freq_scale,
                neox: false,
                yarn: None,
            },
            n_ctx_train: m.meta_u32_or("context_length", 4096)?,
            rope_factors: m
                .has("rope_freqs.weight")
                .then(|| "rope_freqs.weight".to_string()),
        })
    }
}

/// How one layer mixes the sequence's tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mixer {
    /// Attention over the layer's KV cache.
    Attention,
    /// Gated DeltaNet over the layer's recurrent state (`Family::delta_net` gives its shape).
    DeltaNet,
}

/// How one layer's attention sees the sequence.
#[derive(Clone, Copy, Debug)]
pub struct LayerAttention {
    /// The rotation of its queries and keys (adjacent pairs: see `Family::rope_neox`).
    pub rope: Rope,
    /// Keys a query sees, its own included (sliding-window layers); 0: all before it.
    pub window: u32,
    pub mixer: Mixer,
}

/// What sets one family's block apart from another's.
#[derive(Clone, Debug)]
pub struct Family {
    /// Each sublayer's output is normed before its residual add (post_attention_norm, post_ffw_norm).
    pub post_norms: bool,
    /// q and k are RMS-normed per head before RoPE (attn_q_norm, attn_k_norm).
    pub qk_norm: bool,
    /// The gate's activation in the feed-forward block.
    pub activation: Activation,
    /// RoPE rotates dimensions (i, i + n_rot/2) together (NeoX) rather than (2i, 2i + 1). The kernels
    /// rotate adjacent pairs, so such a model's q and k rows (their biases and norms too) are
    /// reordered at load; the K cache then holds keys in that order, which attention cannot tell.
    pub rope_neox: bool,
    /// The embeddings are multiplied by this in the lookup.
    pub embd_scale: f32,
    /// Attention scores are q.k times this.
    pub attn_scale: f32,
    /// Attention scores, then the final logits, are soft-capped (cap * tanh(x / cap)) at these; 0: not.
    pub attn_softcap: f32,
    pub final_softcap: f32,
    /// The tensor of per-pair RoPE frequency divisors every layer applies, if any.
    pub rope_factors: Option<String>,
    /// Pairs that multimodal RoPE turns by a position text tokens leave at 0, which stay as they are
    /// (qwen35.rs's `still_pairs`); empty: none.
    pub rope_still_pairs: Vec<bool>,
    /// Per layer, its RoPE and window.
    pub layers: Vec<LayerAttention>,
    /// The name of the norm before the feed-forward block (Qwen3.5 calls it post_attention_norm).
    pub ffn_norm: &'static str,
    /// The q projection also computes a gate per output value, whose sigmoid scales the attention's
    /// output (Qwen3.5's full-attention layers): attn_q's rows are each head's q, then its gate.
    pub attn_gate: bool,
    /// The shape of the layers whose mixer is `Mixer::DeltaNet`, where there are any.
    pub delta_net: Option<delta_net::Shape>,
}

impl Family {
    /// The llama block: norms before each sublayer only, SwiGLU, adjacent-pair RoPE, every layer
    /// attending to the whole sequence; the rest of the families start from it.
    pub fn llama(c: &Config) -> Family {
        Family {
            post_norms: false,
            qk_norm: false,
            activation: Activation::Silu,
            rope_neox: false,
            embd_scale: 1.0,
            attn_scale: 1.0 / (c.head_dim as f32).sqrt(),
            attn_softcap: 0.0,
            final_softcap: 0.0,
            rope_factors: c.rope_factors.clone(),
            rope_still_pairs: Vec::new(),
            layers: vec![
                LayerAttention {
                    rope: c.rope,
                    window: 0,
                    mixer: Mixer::Attention,
                };
                c.n_layer as usize
            ],
            ffn_norm: "ffn_norm",
            attn_gate: false,
            delta_net: None,
        }
    }

    /// What the engine does with the family, in a few lines for `wick info`.
    pub fn describe(&self, c: &Config) -> Vec<String> {
        let mut lines = vec![format!(
            "dense block: {} layers, {} heads ({} kv) of {}, feed-forward {} ({:?}), {} norms",
            c.n_layer,
            c.n_head,
            c.n_kv_head,
            c.head_dim,
            c.n_ff,
            self.activation,
            match (self.post_norms, self.qk_norm) {
                (false, false) => "pre-sublayer",
                (true, false) => "pre- and post-sublayer",
                (false, true) => "pre-sublayer and per-head q/k",
                (true, true) => "pre- and post-sublayer and per-head q/k",
            }
        )];
        let order = match self.rope_neox {
            true => "NeoX order (q/k rows paired at load)",
            false => "adjacent pairs",
        };
        lines.push(format!(
            "RoPE over {} dims in {order}; attention scale {:.5}; embeddings x {:.4}",
            c.rope.n_rot, self.attn_scale, self.embd_scale
        ));
        if let Some(factors) = &self.rope_factors {
            let magnitude = self.layers.first().and_then(|l| l.rope.yarn);
            lines.push(match magnitude {
                Some(y) => format!(
                    "RoPE frequencies divided by {factors}, the rotation scaled by {}",
                    y.attn_factor
                ),
                None => format!("RoPE frequencies divided by {factors}"),
            });
        }
        if self.attn_softcap > 0.0 || self.final_softcap > 0.0 {
            lines.push(format!(
                "soft-capping: attention scores at {}, final logits at {} (0: none)",
                self.attn_softcap, self.final_softcap
            ));
        }
        if let Some(d) = self.delta_net {
            let linear = self
                .layers
                .iter()
                .filter(|l| l.mixer == Mixer::DeltaNet)
                .count();
            lines.push(format!(
                "{linear} of {} layers are Gated DeltaNet linear attention ({} value heads over {} key heads of {}, a {}-tap convolution; {} KiB of state each), the rest gated attention",
                c.n_layer,
                d.n_v_heads,
                d.n_k_heads,
                d.dim,
                d.conv_kernel,
                (d.state_len() + d.conv_state_len() as u64) * 4 / 1024
            ));
        }
        let windowed = self.layers.iter().filter(|l| l.window > 0).count();
        let base = |l: &LayerAttention| l.rope.freq_base;
        match self.layers.iter().find(|l| l.window > 0) {
            None => lines.push(format!(
                "every {}layer attends to the whole context (RoPE base {})",
                match self.delta_net {
                    Some(_) => "attention ",
                    None => "",
                },
                c.rope.freq_base
            )),
            Some(local) => {
                let global = self.layers.iter().find(|l| l.window == 0);
                lines.push(format!(
                    "{windowed} of {} layers slide a window of {} (RoPE base {}), the rest see the whole context (RoPE base {})",
                    c.n_layer,
                    local.window,
                    base(local),
                    global.map_or(c.rope.freq_base, base)
                ));
            }
        }
        lines
    }
}

/// Makes a family's `Family` from its metadata and config, for a context of `n_ctx` positions (Phi-3
/// picks its RoPE factors by it).
pub type FamilyOf = fn(&Meta, &Config, u32) -> Result<Family, Error>;

/// One transformer block's weights, named as in GGUF.
struct Block {
    attn_norm: wgpu::Buffer, // (n_embd)
    mixing: Mixing,
    post_attention_norm: Option<wgpu::Buffer>, // (n_embd)
    ffn_norm: wgpu::Buffer,                    // (n_embd)
    ffn_gate_up: GateUp,                       // ffn_gate, ffn_up: (2 n_ff, n_embd)
    ffn_down: GpuTensor,                       // (n_embd, n_ff)
    post_ffw_norm: Option<wgpu::Buffer>,       // (n_embd)
}

/// A block's token mixer: its weights, and its KV cache or recurrent state.
enum Mixing {
    Attention(SelfAttention),
    DeltaNet(DeltaNet),
}

impl Mixing {
    /// The projection back into the residual stream.
    fn output(&self) -> &GpuTensor {
        match self {
            Mixing::Attention(a) => &a.attn_output,
            Mixing::DeltaNet(d) => &d.ssm_out,
        }
    }
}

/// An attention layer's weights and cache.
struct SelfAttention {
    /// attn_q, attn_k, attn_v: ((n_head + 2 n_kv_head) head_dim, n_embd); with an output gate, q's
    /// rows are followed by the gate's: ((2 n_head + 2 n_kv_head) head_dim, n_embd)
    attn_qkv: Stacked,
    attn_qkv_bias: Option<wgpu::Buffer>, // attn_q.bias, attn_k.bias, attn_v.bias: (n_head + 2 n_kv_head) head_dim
    attn_qk_norm: Option<wgpu::Buffer>,  // attn_q_norm, attn_k_norm: (2, head_dim)
    attn_output: GpuTensor,              // (n_embd, n_head * head_dim)
    rope_freqs: wgpu::Buffer,            // (n_rot / 2) each rope pair's frequency in this layer
    k_cache: wgpu::Buffer,               // (n_ctx, n_kv_head, head_dim)
    v_cache: wgpu::Buffer,               // (n_ctx, n_kv_head, head_dim)
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
    attn: wgpu::Buffer,    // (batch, max(n_head * head_dim, the DeltaNet read-out's value_dim))
    gate_up: wgpu::Buffer, // (batch, 2 n_ff), where gate and up are kept apart
    hidden: wgpu::Buffer,  // (batch, n_ff)
    /// (batch, (n_head + 2 n_kv_head) head_dim): q, k and v before their per-head norms (and the
    /// output gate's values, where attention has one); and a DeltaNet layer's projected rows, where
    /// the model has such layers (as many values as the larger of the two needs).
    qkv: Option<wgpu::Buffer>,
    /// (batch, n_embd): a sublayer's output before its post-norm.
    sublayer: Option<wgpu::Buffer>,
}

/// Loads the weights, allocates the cache and activations for `n_ctx` positions and prompt chunks of
/// `batch` tokens, and builds the decode and prefill plans, and the scoring plan where `scoring`.
pub async fn load(
    l: &mut Loader<'_>,
    family_of: FamilyOf,
    n_ctx: u32,
    batch: u32,
    scoring: bool,
) -> Result<Forward, Error> {
    let c = Config::from_meta(l)?;
    let f = family_of(l, &c, n_ctx)?;
    let (d, q_dim, kv_dim) = (c.n_embd, c.n_head * c.head_dim, c.n_kv_head * c.head_dim);
    if c.head_dim % 4 != 0 || c.head_dim > attention::MAX_HEAD_DIM {
        return Err(Error::Model(format!(
            "heads of {} dimensions are not supported (a multiple of 4, at most {})",
            c.head_dim,
            attention::MAX_HEAD_DIM
        )));
    }
    if c.rope.n_rot % 2 != 0 || c.rope.n_rot > c.head_dim {
        return Err(Error::Model(format!(
            "RoPE over {} of {} dimensions is not supported",
            c.rope.n_rot, c.head_dim
        )));
    }
    refuse_unsupported(l, &c)?;
    let gpu = l.gpu.clone();
    if let Some(shape) = f.delta_net {
        super::linear_attention::check(shape, gpu.max_binding())?;
    }

    let ends = Ends::load(l, d, c.n_vocab).await?;
    let mut rope_factors = match &f.rope_factors {
        Some(name) => Some(l.host_f32(name, &[c.rope.n_rot / 2]).await?),
        None => None,
    };
    if f.rope_still_pairs.contains(&true) {
        // A still pair's frequency is 0: an infinite divisor.
        let factors = rope_factors.get_or_insert_with(|| vec![1.0; (c.rope.n_rot / 2) as usize]);
        for (factor, &still) in factors.iter_mut().zip(&f.rope_still_pairs) {
            if still {
                *factor = f32::INFINITY;
            }
        }
    }
    let layer_ropes: Vec<Rope> = f.layers.iter().map(|layer| layer.rope).collect();
    let layer_freqs = rope::freqs_buffers(&gpu, &layer_ropes, rope_factors.as_deref());
    // Where NeoX pairs live apart, the rows of q and k each head takes, in adjacent-pair order.
    let head_order = f
        .rope_neox
        .then(|| rope::neox_as_adjacent(c.head_dim, c.rope.n_rot));
    let heads_order = |n_heads: u32| {
        head_order.as_ref().map(|o| {
            (0..n_heads)
                .flat_map(|h| o.iter().map(move |&r| h * c.head_dim + r))
                .collect::<Vec<u32>>()
        })
    };
    let (q_order, k_order) = (heads_order(c.n_head), heads_order(c.n_kv_head));
    // With an output gate, attn_q's rows are each head's q then its gate: q's rows of every head
    // (ordered as above) come first, then every head's gate, then k and v: a row [q | gate | k | v],
    // which head_norm_rope_kv and sigmoid_gate read.
    let (q_rows, q_gated_order) = match f.attn_gate {
        false => (q_dim, None),
        true => {
            let own = |h: u32, r: u32| h * 2 * c.head_dim + r;
            let q = (0..q_dim).map(|r| match &q_order {
                Some(o) => own(o[r as usize] / c.head_dim, o[r as usize] % c.head_dim),
                None => own(r / c.head_dim, r % c.head_dim),
            });
            let gates = (0..q_dim).map(|r| own(r / c.head_dim, c.head_dim + r % c.head_dim));
            (2 * q_dim, Some(q.chain(gates).collect::<Vec<u32>>()))
        }
    };
    let reorder = |v: Vec<f32>, order: &Option<Vec<u32>>| match order {
        None => v,
        Some(o) => o.iter().map(|&r| v[r as usize]).collect(),
    };
    let mut blocks = Vec::with_capacity(c.n_layer as usize);
    for i in 0..c.n_layer {
        let name = |t: &str| format!("blk.{i}.{t}.weight");
        let names = |ts: &[&str]| ts.iter().map(|t| name(t)).collect::<Vec<_>>();
        let optional = |t: &str| f.post_norms.then(|| name(t));
        let cache = (n_ctx as u64) * kv_dim as u64 * 4;
        let attn_norm = l.vector(&name("attn_norm"), d).await?;
        let mixing = match (f.layers[i as usize].mixer, f.delta_net) {
            (Mixer::DeltaNet, Some(shape)) => {
                Mixing::DeltaNet(DeltaNet::load(l, i, shape, d).await?)
            }
            (Mixer::DeltaNet, None) => {
                unreachable!("a DeltaNet layer in a family without its shape")
            }
            (Mixer::Attention, _) => {
                let attn_qkv = match l.has(&name("attn_qkv")) {
                    // q, k and v in one matrix (Phi-3): one order over all its rows.
                    true => {
                        let order: Option<Vec<u32>> =
                            q_order.as_ref().zip(k_order.as_ref()).map(|(q, k)| {
                                let (k, v) = (
                                    k.iter().map(|r| r + q_dim),
                                    q_dim + kv_dim..q_dim + 2 * kv_dim,
                                );
                                q.iter().copied().chain(k).chain(v).collect()
                            });
                        let rows = q_dim + 2 * kv_dim;
                        l.stacked_reordered(&[name("attn_qkv")], d, &[rows], &[order.as_deref()])
                            .await?
                    }
                    false => {
                        let q = q_gated_order.as_ref().or(q_order.as_ref());
                        l.stacked_reordered(
                            &names(&["attn_q", "attn_k", "attn_v"]),
                            d,
                            &[q_rows, kv_dim, kv_dim],
                            &[q.map(|o| o.as_slice()), k_order.as_deref(), None],
                        )
                        .await?
                    }
                };
                let attn_qkv_bias = match l.has(&format!("blk.{i}.attn_q.bias")) {
                    false => None,
                    true => {
                        let bias = |t: &'static str, n: u32| (format!("blk.{i}.{t}.bias"), n);
                        let mut all = Vec::new();
                        for ((name, n), order) in [
                            (bias("attn_q", q_dim), &q_order),
                            (bias("attn_k", kv_dim), &k_order),
                            (bias("attn_v", kv_dim), &None),
                        ] {
                            all.extend(reorder(l.host_f32(&name, &[n]).await?, order));
                        }
                        Some(storage_buffer(
                            &gpu,
                            "attn_qkv.bias",
                            bytemuck::cast_slice(&all),
                        ))
                    }
                };
                let attn_qk_norm = match f.qk_norm {
                    false => None,
                    true => {
                        let mut norms = Vec::new();
                        for t in ["attn_q_norm", "attn_k_norm"] {
                            let w = l.host_f32(&name(t), &[c.head_dim]).await?;
                            norms.extend(reorder(w, &head_order));
                        }
                        Some(storage_buffer(
                            &gpu,
                            "attn_qk_norm",
                            bytemuck::cast_slice(&norms),
                        ))
                    }
                };
                if attn_qkv_bias.is_some() && attn_qk_norm.is_some() {
                    return Err(Error::Model(
                        "q/k/v biases together with per-head q/k norms are not supported".into(),
                    ));
                }
                if f.attn_gate && attn_qk_norm.is_none() {
                    return Err(Error::Model(
                        "gated attention without per-head q/k norms is not supported".into(),
                    ));
                }
                Mixing::Attention(SelfAttention {
                    attn_qkv,
                    attn_qkv_bias,
                    attn_qk_norm,
                    attn_output: l.matrix(&name("attn_output"), q_dim, d).await?,
                    rope_freqs: layer_freqs[i as usize].clone(),
                    k_cache: scratch_buffer(&gpu, &format!("blk.{i}.k_cache"), cache).await?,
                    v_cache: scratch_buffer(&gpu, &format!("blk.{i}.v_cache"), cache).await?,
                })
            }
        };
        let post_attention_norm = match optional("post_attention_norm") {
            Some(n) => Some(l.vector(&n, d).await?),
            None => None,
        };
        let ffn_norm = l.vector(&name(f.ffn_norm), d).await?;
        let ffn_gate_up = match l.has(&name("ffn_gate")) {
            true => {
                l.gate_up([&name("ffn_gate"), &name("ffn_up")], d, c.n_ff)
                    .await?
            }
            // Gate and up in one matrix, gate first (Phi-3).
            false => l.gate_up_fused(&name("ffn_up"), d, c.n_ff).await?,
        };
        let ffn_down = l.matrix(&name("ffn_down"), c.n_ff, d).await?;
        let post_ffw_norm = match optional("post_ffw_norm") {
            Some(n) => Some(l.vector(&n, d).await?),
            None => None,
        };
        blocks.push(Block {
            attn_norm,
            mixing,
            post_attention_norm,
            ffn_norm,
            ffn_gate_up,
            ffn_down,
            post_ffw_norm,
        });
    }

    let rows =
        |label: &'static str, n: u32| scratch_buffer(&gpu, label, batch as u64 * n as u64 * 4);
    let projected = q_rows + 2 * kv_dim;
    let (projected, read_out) = match f.delta_net {
        Some(s) => (projected.max(s.row_len()), q_dim.max(s.value_dim())),
        None => (projected, q_dim),
    };
    let a = Activations {
        x: rows("x", d).await?,
        xn: rows("xn", d).await?,
        q: rows("q", q_dim).await?,
        attn: rows("attn", read_out).await?,
        gate_up: rows("gate_up", 2 * c.n_ff).await?,
        hidden: rows("hidden", c.n_ff).await?,
        qkv: match f.qk_norm || f.delta_net.is_some() {
            true => Some(rows("qkv", projected).await?),
            false => None,
        },
        sublayer: match f.post_norms {
            true => Some(rows("sublayer", d).await?),
            false => None,
        },
    };
    let logits = scratch_buffer(&gpu, "logits", c.n_vocab as u64 * 4).await?;
    let step = StepInput::new(&gpu, batch);

    let model = Model {
        c: &c,
        f: &f,
        blocks: &blocks,
        ends: &ends,
        a: &a,
    };
    let push_logits = |plan: &mut Plan, logits: &wgpu::Buffer| {
        match f.post_norms {
            // The last layer's post-norm already normed x with output_norm.
            true => ends.push_head(plan, &a.xn, logits),
            false => ends.push_logits(plan, &a.x, &a.xn, logits, c.rms_eps),
        }
        if f.final_softcap > 0.0 {
            softcap::push(plan, logits, c.n_vocab, f.final_softcap);
        }
    };
    let decode_plan = |attention: Attention| {
        let mut plan = Plan::new(&gpu, &step, 1);
        model.push_layers(&mut plan, attention);
        push_logits(&mut plan, &logits);
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
    let (prefill, score) = super::prompt_plans(
        &gpu,
        &step,
        (batch, scoring),
        c.n_vocab,
        |plan| model.push_layers(plan, Attention::Whole),
        push_logits,
    )
    .await?;
    let recurrent = blocks
        .iter()
        .filter_map(|b| match &b.mixing {
            Mixing::DeltaNet(d) => Some(d.states().map(|s| s.clone())),
            Mixing::Attention(_) => None,
        })
        .flatten()
        .collect();
    Ok(Forward {
        decode,
        decode_long,
        prefill,
        score,
        step,
        logits,
        n_vocab: c.n_vocab,
        n_ctx_train: c.n_ctx_train,
        recurrent,
    })
}

/// Tensors of layouts llama.cpp also reads for these families but the block does not run: said
/// plainly rather than left unread.
fn refuse_unsupported(m: &Meta, c: &Config) -> Result<(), Error> {
    let mut names = vec!["output.bias".to_string()];
    for i in 0..c.n_layer {
        for t in [
            "attn_qkv.bias",
            "attn_output.bias",
            "ffn_up.bias",
            "ffn_down.bias",
        ] {
            names.push(format!("blk.{i}.{t}"));
        }
    }
    match names.iter().find(|n| m.has(n)) {
        Some(n) => Err(Error::Model(format!(
            "tensor {n} is not supported for {} yet",
            m.arch
        ))),
        None => Ok(()),
    }
}

/// What the plans are made of.
struct Model<'a> {
    c: &'a Config,
    f: &'a Family,
    blocks: &'a [Block],
    ends: &'a Ends,
    a: &'a Activations,
}

impl Model<'_> {
    /// The embedding lookup and every layer, for each token of the run. With post-norms, x leaves
    /// normed by output_norm in xn.
    fn push_layers(&self, plan: &mut Plan, attention: Attention) {
        let (c, f, a) = (self.c, self.f, self.a);
        let (d, eps) = (c.n_embd, c.rms_eps);
        embed::push(plan, &self.ends.token_embd, &a.x, f.embd_scale);
        for (i, b) in self.blocks.iter().enumerate() {
            plan.begin_layer(match b.mixing {
                Mixing::Attention(_) => "attention",
                Mixing::DeltaNet(_) => "linear attention",
            });
            let layer = &f.layers[i];
            // With post-norms, the previous layer's last kernel already normed x with attn_norm.
            if i == 0 || !f.post_norms {
                rms_norm::push(plan, &a.x, &b.attn_norm, &a.xn, d, eps);
            }
            match &b.mixing {
                Mixing::Attention(sa) => self.push_attention(plan, sa, layer, &attention),
                Mixing::DeltaNet(dn) => {
                    let shape = f.delta_net.expect("the family's DeltaNet shape");
                    let rows = a.qkv.as_ref().expect("rows for the DeltaNet projection");
                    dn.push(plan, shape, (&a.xn, rows, &a.attn), eps);
                }
            }

            // attn_output, the residual add and ffn_norm.
            match (&b.post_attention_norm, &a.sublayer) {
                (Some(post), Some(t)) => {
                    matvec::push(plan, b.mixing.output(), &a.attn, t, false);
                    rms_norm::push_add_norm(plan, (t, post), &a.x, (&b.ffn_norm, &a.xn), d, eps);
                }
                _ => {
                    matvec::push(plan, b.mixing.output(), &a.attn, &a.x, true);
                    rms_norm::push(plan, &a.x, &b.ffn_norm, &a.xn, d, eps);
                }
            }

            // The feed-forward block and its residual add.
            let ffn = (&b.ffn_gate_up, &b.ffn_down);
            let scratch = (&a.gate_up, &a.hidden);
            match (&b.post_ffw_norm, &a.sublayer) {
                (Some(post), Some(t)) => {
                    glu::push_ffn(plan, f.activation, ffn, &a.xn, scratch, (t, false));
                    let next = match self.blocks.get(i + 1) {
                        Some(next) => &next.attn_norm,
                        None => &self.ends.output_norm,
                    };
                    rms_norm::push_add_norm(plan, (t, post), &a.x, (next, &a.xn), d, eps);
                }
                _ => glu::push_ffn(plan, f.activation, ffn, &a.xn, scratch, (&a.x, true)),
            }
        }
        plan.layer_boundary();
    }

    /// q, k and v from xn, rotated, k and v into the cache, then attention into `attn`, gated where
    /// the family gates it.
    fn push_attention(
        &self,
        plan: &mut Plan,
        b: &SelfAttention,
        layer: &LayerAttention,
        attention: &Attention,
    ) {
        let (c, a) = (self.c, self.a);
        let heads = rope_kv::Heads {
            n_head: c.n_head,
            n_kv_head: c.n_kv_head,
            head_dim: c.head_dim,
        };
        let outputs = rope_kv::RopeBuffers {
            q: &a.q,
            k_cache: &b.k_cache,
            v_cache: &b.v_cache,
            freqs: &b.rope_freqs,
        };
        match (&b.attn_qk_norm, &a.qkv) {
            (Some(norms), Some(qkv)) => {
                matvec::push_stacked(plan, &b.attn_qkv, &a.xn, qkv);
                let rope = (&layer.rope, c.rms_eps);
                let gated = self.f.attn_gate;
                head_norm_rope_kv::push(plan, (qkv, gated), norms, rope, heads, &outputs);
            }
            _ => {
                let qkv = (&b.attn_qkv, b.attn_qkv_bias.as_ref());
                rope_kv::push(plan, qkv, &a.xn, &layer.rope, heads, &outputs);
            }
        }
        let shape = attention::Shape {
            n_head: c.n_head,
            n_kv_head: c.n_kv_head,
            head_dim: c.head_dim,
            scale: self.f.attn_scale,
            window: layer.window,
            softcap: self.f.attn_softcap,
        };
        let buffers = attention::AttentionBuffers {
            q: &a.q,
            k_cache: &b.k_cache,
            v_cache: &b.v_cache,
            out: &a.attn,
        };
        match attention {
            Attention::Whole => attention::push(plan, shape, &buffers),
            Attention::Split(parts) => {
                attention::push_split(plan, shape, ATTENTION_SPLITS, &buffers, parts)
            }
        }
        if let (true, Some(qkv)) = (self.f.attn_gate, &a.qkv) {
            let (q_dim, kv_dim) = (c.n_head * c.head_dim, c.n_kv_head * c.head_dim);
            sigmoid_gate::push(plan, &a.attn, q_dim, (qkv, 2 * q_dim + 2 * kv_dim, q_dim));
        }
    }
}

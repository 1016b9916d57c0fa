//! The dense transformer block that llama, qwen2, gemma3, gemma4 and qwen35 share: RMSNorm, a token
//! mixer (attention with RoPE over a grouped-query KV cache, self_attention.rs, or in Qwen3.5's
//! recurrent layers Gated DeltaNet linear attention over a fixed-size state, linear_attention.rs), a
//! feed-forward sublayer (a gated MLP, or a mixture of experts: feed_forward.rs), in Gemma 4 per-layer
//! embeddings (per_layer_embd.rs), tied or separate output head. What differs from family to family is named data, a `Family`, which each family's own
//! file makes from its metadata.

use super::feed_forward::{FeedForward, FfnScratch, MoeConfig};
use super::linear_attention::DeltaNet;
use super::per_layer_embd::PerLayerEmbd;
use super::self_attention::{self, Attention, SelfAttention};
use super::{Ends, Forward, Loader, Meta};
use crate::gguf::Value;
use crate::gpu::{scratch_buffer, GpuTensor, Plan, StepInput};
use crate::ops::glu::Activation;
use crate::ops::rope::{self, Rope, Yarn};
use crate::ops::{attention, bias, delta_net, embed, matvec, rms_norm, softcap};
use crate::Error;

/// Hyperparameters, from GGUF metadata.
#[derive(Clone, Debug)]
pub struct Config {
    pub n_embd: u32,
    pub n_layer: u32,
    /// Per layer, the feed-forward block's width (one value in most files; Gemma 4 widens its last
    /// layers).
    pub n_ff: Vec<u32>,
    pub n_head: u32,
    /// Per layer, its kv heads (one value in most files, an array in Gemma 4's).
    pub n_kv_head: Vec<u32>,
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
        // Next-token-prediction layers (MTP) follow the model's own; they are not run.
        let n_layer = m.meta_u32("block_count")?;
        let n_mtp = m.meta_u32_or("nextn_predict_layers", 0)?;
        if n_mtp >= n_layer {
            return Err(Error::Model(format!(
                "{n_mtp} next-token-prediction layers leave none of the {n_layer} blocks to run"
            )));
        }
        let n_kv_head = per_layer(m, "attention.head_count_kv", n_layer, Some(n_head))?;
        if let Some(&kv) = n_kv_head
            .iter()
            .find(|&&kv| n_head == 0 || kv == 0 || n_head % kv != 0)
        {
            return Err(Error::Model(format!(
                "{n_head} heads cannot share {kv} kv heads"
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
        let n_rot = m.meta_u32_or("rope.dimension_count", head_dim)?;
        let freq_base = m.meta_f32_or("rope.freq_base", 10000.0)?;
        let n_ctx_train = m.meta_u32_or("context_length", 4096)?;
        let scaling = m.meta_str("rope.scaling.type").unwrap_or("none");
        let factor = m.meta_f32_or("rope.scaling.factor", 1.0)?;
        let (freq_scale, yarn) = match scaling {
            "linear" => (1.0 / factor, None),
            "none" => (1.0, None),
            // DeepSeek's scaled attention (a log multiplier) is deepseek2.rs's alone.
            "yarn" if m.meta_f32_or("rope.scaling.yarn_log_multiplier", 0.0)? == 0.0 => {
                let n_ctx_orig =
                    m.meta_u32_or("rope.scaling.original_context_length", n_ctx_train)?;
                let attn_factor = m.meta_f32_or("rope.scaling.attn_factor", 1.0)?;
                let yarn = Yarn::scaled(n_rot, freq_base, n_ctx_orig, factor, attn_factor);
                (1.0 / factor, Some(yarn))
            }
            other => {
                return Err(Error::Model(format!(
                    "rope scaling {other:?} is not supported for {}",
                    m.arch
                )))
            }
        };
        // Mixture-of-experts files need not say how wide a dense block would be.
        let n_ff_default = m.has_key("expert_count").then_some(0);
        let n_ff = per_layer(m, "feed_forward_length", n_layer, n_ff_default)?;
        let n_run = (n_layer - n_mtp) as usize;
        Ok(Config {
            n_embd,
            n_layer: n_layer - n_mtp,
            n_ff: n_ff[..n_run].to_vec(),
            n_head,
            n_kv_head: n_kv_head[..n_run].to_vec(),
            head_dim,
            n_vocab,
            rms_eps: m.meta_f32_or("attention.layer_norm_rms_epsilon", 1e-5)?,
            rope: Rope {
                n_rot,
                freq_base,
                freq_scale,
                neox: false,
                yarn,
            },
            n_ctx_train,
            rope_factors: m
                .has("rope_freqs.weight")
                .then(|| "rope_freqs.weight".to_string()),
        })
    }
}

/// A count given once for every layer or as one value per layer (llama.cpp's "key or array"); the
/// default where the file has neither.
pub(super) fn per_layer(
    m: &Meta,
    key: &str,
    n_layer: u32,
    default: Option<u32>,
) -> Result<Vec<u32>, Error> {
    let full = format!("{}.{key}", m.arch);
    let bad = |why: &str| Error::Model(format!("metadata {full}: {why}"));
    match m.header.get(&full) {
        Some(Value::Array(values)) => {
            let values: Option<Vec<u32>> = values
                .iter()
                .map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok()))
                .collect();
            match values {
                Some(v) if v.len() == n_layer as usize => Ok(v),
                Some(v) => Err(bad(&format!("{} values for {n_layer} layers", v.len()))),
                None => Err(bad("not an array of 32-bit counts")),
            }
        }
        Some(_) => Ok(vec![m.meta_u32(key)?; n_layer as usize]),
        None => match default {
            Some(d) => Ok(vec![d; n_layer as usize]),
            None => Err(bad("missing")),
        },
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
    /// Its heads' dimensions, and its kv heads (Gemma 4's sliding layers differ from its others in
    /// both).
    pub head_dim: u32,
    pub n_kv_head: u32,
    /// Its rotation's frequencies are divided by the family's `rope_factors` (Gemma 4's proportional
    /// RoPE is its global layers' alone).
    pub rope_factors: bool,
    /// The earlier layer whose KV cache this one reads, computing only q (Gemma 4's last layers).
    pub kv_from: Option<usize>,
}

impl LayerAttention {
    /// Layer `i` of the config: its heads, the config's rotation and factors, every position seen.
    pub fn new(c: &Config, i: usize) -> LayerAttention {
        LayerAttention {
            rope: c.rope,
            window: 0,
            mixer: Mixer::Attention,
            head_dim: c.head_dim,
            n_kv_head: c.n_kv_head[i],
            rope_factors: true,
            kv_from: None,
        }
    }
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
    /// v is RMS-normed per head, without weights, before the cache (Gemma 4).
    pub v_norm: bool,
    /// Values per layer of the per-layer embeddings (embedding_length_per_layer_input); 0: none.
    pub per_layer_width: u32,
    /// Every layer's feed-forward sublayer is a mixture of these experts; None: a gated MLP.
    pub moe: Option<MoeConfig>,
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
            layers: (0..c.n_layer as usize)
                .map(|i| LayerAttention::new(c, i))
                .collect(),
            ffn_norm: "ffn_norm",
            attn_gate: false,
            delta_net: None,
            v_norm: false,
            per_layer_width: 0,
            moe: None,
        }
    }

    /// What the engine does with the family, in a few lines for `wick info`.
    pub fn describe(&self, c: &Config) -> Vec<String> {
        let spread = |v: &mut dyn Iterator<Item = u32>| {
            let v: Vec<u32> = v.collect();
            let (lo, hi) = (v.iter().min().copied(), v.iter().max().copied());
            match (lo, hi) {
                (Some(lo), Some(hi)) if lo != hi => format!("{lo}-{hi}"),
                (Some(lo), _) => lo.to_string(),
                _ => "0".into(),
            }
        };
        let ffn = match self.moe {
            Some(_) => "experts".to_string(),
            None => spread(&mut c.n_ff.iter().copied()),
        };
        let mut lines = vec![format!(
            "dense block: {} layers, {} heads ({} kv) of {}, feed-forward {ffn} ({:?}), {} norms",
            c.n_layer,
            c.n_head,
            spread(&mut self.layers.iter().map(|l| l.n_kv_head)),
            spread(&mut self.layers.iter().map(|l| l.head_dim)),
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
        if let (Some(y), None) = (c.rope.yarn, &self.rope_factors) {
            lines.push(format!(
                "YaRN: frequencies scaled by {}, ramped over pairs {}-{}, the rotation scaled by {}",
                c.rope.freq_scale, y.corr_low, y.corr_high, y.attn_factor
            ));
        }
        if let Some(factors) = &self.rope_factors {
            let magnitude = self.layers.first().and_then(|l| l.rope.yarn);
            lines.push(match magnitude {
                Some(y) => format!(
                    "RoPE frequencies divided by {factors}, the rotation scaled by {}",
                    y.attn_factor
                ),
                None => format!("RoPE frequencies divided by {factors}"),
            });
            let with = self.layers.iter().filter(|l| l.rope_factors).count();
            if with < self.layers.len() {
                let line = lines.pop().unwrap_or_default();
                lines.push(format!("{line} in {with} of {} layers", self.layers.len()));
            }
        }
        if let Some(moe) = &self.moe {
            lines.push(moe.describe());
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
        let shared = self.layers.iter().filter(|l| l.kv_from.is_some()).count();
        if shared > 0 {
            lines.push(format!(
                "the last {shared} layers read earlier layers' KV caches (no cache of their own)"
            ));
        }
        if self.per_layer_width > 0 {
            lines.push(format!(
                "per-layer embeddings: {} values per layer and token",
                self.per_layer_width
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
    ffn: FeedForward,
    post_ffw_norm: Option<wgpu::Buffer>, // (n_embd)
    /// The layer's output is multiplied by this (layer_output_scale; 1 where the file has none).
    out_scale: f32,
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

    /// Adds the projection of `out` into y (onto what y holds where `accumulate`), and its bias.
    fn push_output(
        &self,
        plan: &mut Plan,
        out: &wgpu::Buffer,
        (y, accumulate): (&wgpu::Buffer, bool),
    ) {
        let w = self.output();
        matvec::push(plan, w, out, y, accumulate);
        if let Mixing::Attention(SelfAttention {
            attn_output_bias: Some(b),
            ..
        }) = self
        {
            bias::push(plan, b, bias::Rows::One, y, w.rows);
        }
    }
}

/// The activations a run works through, f32, each with one row per token of the largest run, as
/// wide as the widest layer needs.
pub struct Activations {
    pub x: wgpu::Buffer,    // (batch, n_embd) the residual stream
    pub xn: wgpu::Buffer,   // (batch, n_embd) normed
    pub q: wgpu::Buffer,    // (batch, n_head * head_dim), rotated (k and v go to the cache)
    pub attn: wgpu::Buffer, // (batch, max(n_head * head_dim, the DeltaNet read-out's value_dim))
    pub ffn: FfnScratch,
    /// (batch, (n_head + 2 n_kv_head) head_dim): q, k and v before their per-head norms (and the
    /// output gate's values, where attention has one); and a DeltaNet layer's projected rows, where
    /// the model has such layers (as many values as the larger of the two needs).
    pub qkv: Option<wgpu::Buffer>,
    /// (batch, n_embd): a sublayer's output before its post-norm.
    pub sublayer: Option<wgpu::Buffer>,
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
    let d = c.n_embd;
    for layer in f.layers.iter().filter(|l| l.mixer == Mixer::Attention) {
        self_attention::check(layer)?;
    }
    refuse_unsupported(l, &c, &f)?;
    let gpu = l.gpu.clone();
    if let Some(shape) = f.delta_net {
        super::linear_attention::check(shape, gpu.max_binding())?;
    }

    let ends = Ends::load(l, d, c.n_vocab).await?;
    let n_factors = f
        .layers
        .iter()
        .filter(|l| l.rope_factors)
        .map(|l| l.rope.n_rot / 2)
        .max()
        .unwrap_or(c.rope.n_rot / 2);
    let mut rope_factors = match &f.rope_factors {
        Some(name) => Some(l.host_f32(name, &[n_factors]).await?),
        None => None,
    };
    if f.rope_still_pairs.contains(&true) {
        // A still pair's frequency is 0: an infinite divisor.
        let factors = rope_factors.get_or_insert_with(|| vec![1.0; n_factors as usize]);
        for (factor, &still) in factors.iter_mut().zip(&f.rope_still_pairs) {
            if still {
                *factor = f32::INFINITY;
            }
        }
    }
    let layer_freqs = rope::freqs_buffers(
        &gpu,
        f.layers.iter().map(|layer| {
            let factors = rope_factors.as_deref().filter(|_| layer.rope_factors);
            layer.rope.freqs(factors)
        }),
    );
    let mut blocks: Vec<Block> = Vec::with_capacity(c.n_layer as usize);
    for i in 0..c.n_layer {
        let layer = &f.layers[i as usize];
        let name = |t: &str| format!("blk.{i}.{t}.weight");
        let optional = |t: &str| f.post_norms.then(|| name(t));
        let attn_norm = l.vector(&name("attn_norm"), d).await?;
        let mixing = match (layer.mixer, f.delta_net) {
            (Mixer::DeltaNet, Some(shape)) => {
                Mixing::DeltaNet(DeltaNet::load(l, i, shape, d).await?)
            }
            (Mixer::DeltaNet, None) => {
                unreachable!("a DeltaNet layer in a family without its shape")
            }
            (Mixer::Attention, _) => {
                let shared = match layer.kv_from {
                    None => None,
                    Some(j) => match blocks.get(j).map(|b| &b.mixing) {
                        Some(Mixing::Attention(source)) => Some(source.cache.clone()),
                        _ => {
                            return Err(Error::Model(format!(
                                "layer {i} would read the KV cache of layer {j}, which has none"
                            )))
                        }
                    },
                };
                let freqs = layer_freqs[i as usize].clone();
                let which = (&c, &f, layer);
                Mixing::Attention(SelfAttention::load(l, i, which, freqs, (n_ctx, shared)).await?)
            }
        };
        let post_attention_norm = match optional("post_attention_norm") {
            Some(n) => Some(l.vector(&n, d).await?),
            None => None,
        };
        let n_ff = c.n_ff[i as usize];
        let ffn_norm = l.vector(&name(f.ffn_norm), d).await?;
        let ffn = match &f.moe {
            Some(moe) => FeedForward::load_experts(l, i, d, moe).await?,
            None => FeedForward::load_dense(l, i, d, n_ff).await?,
        };
        let post_ffw_norm = match optional("post_ffw_norm") {
            Some(n) => Some(l.vector(&n, d).await?),
            None => None,
        };
        let out_scale = match l.has(&name("layer_output_scale")) {
            true => l.host_f32(&name("layer_output_scale"), &[1]).await?[0],
            false => 1.0,
        };
        blocks.push(Block {
            attn_norm,
            mixing,
            post_attention_norm,
            ffn_norm,
            ffn,
            post_ffw_norm,
            out_scale,
        });
    }
    let (per_layer, token_rows) = match f.per_layer_width {
        0 => (None, None),
        width => {
            let shape = (d, c.n_vocab, c.n_layer, width);
            let (p, rows) =
                PerLayerEmbd::load(l, shape, (batch, c.rms_eps, !l.per_layer_on_gpu)).await?;
            (Some(p), rows)
        }
    };

    let rows =
        |label: &'static str, n: u32| scratch_buffer(&gpu, label, batch as u64 * n as u64 * 4);
    let widest = |of: &dyn Fn(&LayerAttention) -> u32| {
        f.layers
            .iter()
            .filter(|l| l.mixer == Mixer::Attention)
            .map(of)
            .max()
            .unwrap_or(0)
    };
    let q_dim = widest(&|l| c.n_head * l.head_dim);
    let projected = blocks
        .iter()
        .filter_map(|b| match &b.mixing {
            Mixing::Attention(a) => Some(a.row_len()),
            Mixing::DeltaNet(_) => None,
        })
        .max()
        .unwrap_or(0);
    let (projected, read_out) = match f.delta_net {
        Some(s) => (projected.max(s.row_len()), q_dim.max(s.value_dim())),
        None => (projected, q_dim),
    };
    let n_ff = c.n_ff.iter().copied().max().unwrap_or(0);
    let a = Activations {
        x: rows("x", d).await?,
        xn: rows("xn", d).await?,
        q: rows("q", q_dim.max(1)).await?,
        attn: rows("attn", read_out).await?,
        ffn: FfnScratch::new(&gpu, (batch, d), n_ff, f.moe.as_ref()).await?,
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
        per_layer: per_layer.as_ref(),
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
    let decode_long = match n_ctx > self_attention::SPLIT_ATTENTION_FROM {
        false => None,
        true => {
            let head_dim = widest(&|l| l.head_dim);
            let splits = self_attention::ATTENTION_SPLITS;
            let bytes = attention::split_scratch_bytes(c.n_head, head_dim, splits);
            let parts = scratch_buffer(&gpu, "attention splits", bytes).await?;
            let mut plan = decode_plan(Attention::Split(&parts));
            plan.finish(&gpu).await?;
            Some((self_attention::SPLIT_ATTENTION_FROM, plan))
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
        token_rows,
    })
}

/// Tensors of layouts llama.cpp also reads for these families but the block does not run: said
/// plainly rather than left unread.
fn refuse_unsupported(m: &Meta, c: &Config, f: &Family) -> Result<(), Error> {
    if f.moe.is_some() && f.post_norms {
        // Experts add into the residual; a post-norm needs their sum apart.
        return Err(Error::Model(format!(
            "experts with post-sublayer norms are not supported for {} yet",
            m.arch
        )));
    }
    let mut names = vec!["output.bias".to_string()];
    for i in 0..c.n_layer {
        for t in ["attn_qkv.bias", "ffn_up.bias", "ffn_down.bias"] {
            names.push(format!("blk.{i}.{t}"));
        }
        if !f.post_norms {
            // The scale is applied where the post-norms fold the residual add.
            names.push(format!("blk.{i}.layer_output_scale.weight"));
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
    per_layer: Option<&'a PerLayerEmbd>,
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
        if let Some(p) = self.per_layer {
            p.push_inputs(plan, &a.x);
        }
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
                Mixing::Attention(sa) => sa.push(plan, (c, f, layer), a, &attention),
                Mixing::DeltaNet(dn) => {
                    let shape = f.delta_net.expect("the family's DeltaNet shape");
                    let rows = a.qkv.as_ref().expect("rows for the DeltaNet projection");
                    dn.push(plan, shape, (&a.xn, rows, &a.attn), eps);
                }
            }

            // attn_output, the residual add and ffn_norm.
            match (&b.post_attention_norm, &a.sublayer) {
                (Some(post), Some(t)) => {
                    b.mixing.push_output(plan, &a.attn, (t, false));
                    rms_norm::push_add_norm(plan, (t, post), &a.x, (&b.ffn_norm, &a.xn), d, eps);
                }
                _ => {
                    b.mixing.push_output(plan, &a.attn, (&a.x, true));
                    rms_norm::push(plan, &a.x, &b.ffn_norm, &a.xn, d, eps);
                }
            }

            // The feed-forward block and its residual add, then the per-layer embedding's part; the
            // layer's last kernel norms x for the next layer.
            let (ffn, act, scratch) = (&b.ffn, f.activation, &a.ffn);
            let next = match self.blocks.get(i + 1) {
                Some(next) => &next.attn_norm,
                None => &self.ends.output_norm,
            };
            match (&b.post_ffw_norm, &a.sublayer, self.per_layer) {
                (Some(post), Some(t), Some(p)) => {
                    ffn.push(plan, act, &a.xn, scratch, (t, false));
                    // The norm of this sum is not read: the per-layer part norms its own.
                    rms_norm::push_add_norm(plan, (t, post), &a.x, (next, &a.xn), d, eps);
                    p.push_layer(plan, i, (&a.x, b.out_scale), t, (next, &a.xn));
                }
                (Some(post), Some(t), None) => {
                    ffn.push(plan, act, &a.xn, scratch, (t, false));
                    let x = (&a.x, b.out_scale);
                    rms_norm::push_add_scale_norm(plan, (t, post), x, (next, &a.xn), d, eps);
                }
                _ => ffn.push(plan, act, &a.xn, scratch, (&a.x, true)),
            }
        }
        plan.layer_boundary();
    }
}

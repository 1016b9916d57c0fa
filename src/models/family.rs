//! What sets one family's dense block apart, as data: the hyperparameters every family reads
//! (`Config`), how each layer's attention sees the sequence (`LayerAttention`), and the family's
//! choices (`Family`), which each family's own file makes from its metadata; with `wick info`'s
//! description of them.

use super::feed_forward::MoeConfig;
use super::Meta;
use crate::ops::delta_net;
use crate::ops::glu::Activation;
use crate::ops::rope::{Rope, Yarn};
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
        let n_kv_head = m.per_layer("attention.head_count_kv", n_layer, Some(n_head))?;
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
            // Without one, llama.cpp's attention factor is get_mscale(factor) over the growth it
            // cancels, 1: the rotation grows by 1 + 0.1 ln(factor) as ggml's YaRN has it (gpt-oss).
            "yarn" if m.meta_f32_or("rope.scaling.yarn_log_multiplier", 0.0)? == 0.0 => {
                let n_ctx_orig =
                    m.meta_u32_or("rope.scaling.original_context_length", n_ctx_train)?;
                let attn_factor = m.meta_f32_or("rope.scaling.attn_factor", 1.0)?;
                let yarn = Yarn::new(n_rot, freq_base, n_ctx_orig, attn_factor);
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
        let n_ff = m.per_layer("feed_forward_length", n_layer, n_ff_default)?;
        let n_run = (n_layer - n_mtp) as usize;
        Ok(Config {
            n_embd,
            n_layer: n_layer - n_mtp,
            n_ff: n_ff[..n_run].to_vec(),
            n_head,
            n_kv_head: n_kv_head[..n_run].to_vec(),
            head_dim,
            n_vocab,
            // The norms' epsilon: RMSNorm's, or LayerNorm's in BERT's files.
            rms_eps: match m.has_key("attention.layer_norm_rms_epsilon") {
                true => m.meta_f32_or("attention.layer_norm_rms_epsilon", 1e-5)?,
                false => m.meta_f32_or("attention.layer_norm_epsilon", 1e-5)?,
            },
            rope: Rope {
                n_rot,
                freq_base,
                freq_scale,
                neox: false,
                yarn,
                sections: None,
            },
            n_ctx_train,
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
    /// Its heads' dimensions, and its kv heads (Gemma 4's sliding layers differ from its others in
    /// both).
    pub head_dim: u32,
    pub n_kv_head: u32,
    /// Its rotation's frequencies are divided by the family's `rope_factors` (Gemma 4's proportional
    /// RoPE is its global layers' alone).
    pub rope_factors: bool,
    /// The earlier layer whose KV cache this one reads, computing only q (Gemma 4's last layers).
    pub kv_from: Option<usize>,
    /// An image's tokens (rows given in place of embeddings) see the image's whole span, later
    /// tokens of it too, as llama.cpp runs Gemma 3's; otherwise they see what a text token would.
    pub images_both_ways: bool,
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
            images_both_ways: true,
        }
    }
}

/// What sets one family's block apart from another's.
#[derive(Clone, Debug)]
pub struct Family {
    /// Attention sees only earlier positions (a decoder). An embedding model's encoder sees the whole
    /// input at once (EmbeddingGemma): it makes no text, and its input is one run.
    pub causal: bool,
    /// Each sublayer's output is normed before its residual add (post_attention_norm, post_ffw_norm).
    pub post_norms: bool,
    /// BERT's norms: LayerNorms with biases of the residual stream itself after each residual add
    /// (token_embd_norm, attn_output_norm, layer_output_norm), and rows added to the embeddings for
    /// token type 0 and, where the file has them, learned absolute positions.
    pub layer_norms: bool,
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
            causal: true,
            post_norms: false,
            layer_norms: false,
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
        if !self.causal {
            lines.push(
                "bidirectional attention (an encoder: embeddings of whole inputs, no text); a sliding window spans half its width either side".into(),
            );
        }
        if self.layer_norms {
            lines.push(
                "LayerNorms of the stream after each residual add (BERT's), token type 0's row added to the embeddings".into(),
            );
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

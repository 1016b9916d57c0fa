//! The dense transformer block that llama, qwen2, gemma3, gemma4, qwen35 and the BERT encoders share:
//! a norm (RMSNorm before each sublayer; BERT's LayerNorm of the stream after each residual add), a
//! token mixer (attention with RoPE over a grouped-query KV cache, self_attention.rs, or in Qwen3.5's
//! recurrent layers Gated DeltaNet linear attention over a fixed-size state, linear_attention.rs), a
//! feed-forward sublayer (a gated or plain MLP, or a mixture of experts: feed_forward.rs), in Gemma 4
//! per-layer embeddings (per_layer_embd.rs), tied or separate output head. What differs from family to family
//! is named data, a `Family` (family.rs), which each family's own file makes from its metadata.

use super::family::{Config, Family, FamilyOf, LayerAttention, Mixer};
use super::feed_forward::{FeedForward, FfnScratch};
use super::linear_attention::DeltaNet;
use super::per_layer_embd::PerLayerEmbd;
use super::self_attention::{self, Attention, SelfAttention};
use super::{Ends, Forward, Loader, Meta, Norm, PromptRuns};
use crate::gpu::{scratch_buffer, GpuTensor, Plan, StepInput};
use crate::ops::matvec::{self, Input};
use crate::ops::rope;
use crate::ops::{add_position, attention, embed, rms_norm, softcap};
use crate::Error;

/// One transformer block's weights, named as in GGUF.
struct Block {
    attn_norm: Norm, // (n_embd)
    mixing: Mixing,
    post_attention_norm: Option<wgpu::Buffer>, // (n_embd)
    ffn_norm: Norm,                            // (n_embd)
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
        match self {
            Mixing::Attention(SelfAttention {
                attn_output_bias: Some(b),
                ..
            }) => matvec::push_biased(plan, w, out, (y, accumulate), b),
            _ => matvec::push(plan, w, out, y, accumulate),
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
/// `runs.batch` tokens, and builds the decode step and the prompt runs `runs` asks for.
pub async fn load(
    l: &mut Loader<'_>,
    family_of: FamilyOf,
    n_ctx: u32,
    runs: PromptRuns,
) -> Result<Forward, Error> {
    let batch = runs.batch;
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

    // BERT's norms after each residual add: the one before a layer's attention is the embeddings' or
    // the previous layer's last, the one before its feed-forward its attention's output norm, the
    // final one the last layer's.
    let norm_names = |i: u32| match f.layer_norms {
        false => (
            format!("blk.{i}.attn_norm"),
            format!("blk.{i}.{}", f.ffn_norm),
        ),
        true => (
            match i {
                0 => "token_embd_norm".to_string(),
                _ => format!("blk.{}.layer_output_norm", i - 1),
            },
            format!("blk.{i}.attn_output_norm"),
        ),
    };
    let output_norm = match f.layer_norms {
        false => "output_norm".to_string(),
        true => format!("blk.{}.layer_output_norm", c.n_layer - 1),
    };
    let ends = Ends::load(l, d, c.n_vocab, (&output_norm, f.layer_norms)).await?;
    let positions = match f.layer_norms {
        false => None,
        true => Some(position_rows(l, &c).await?),
    };
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
        let (attn_norm_name, ffn_norm_name) = norm_names(i);
        let attn_norm = Norm::load(l, &attn_norm_name, d, f.layer_norms).await?;
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
        let ffn_norm = Norm::load(l, &ffn_norm_name, d, f.layer_norms).await?;
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
    let pooled_projections = super::pooled_projections(l, d).await?;
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
    let n_logits = l.n_logits(c.n_vocab);
    let logits = scratch_buffer(&gpu, "logits", n_logits as u64 * 4).await?;
    let step = StepInput::new(&gpu, batch);

    let model = Model {
        c: &c,
        f: &f,
        blocks: &blocks,
        per_layer: per_layer.as_ref(),
        ends: &ends,
        positions: positions.as_ref(),
        a: &a,
    };
    let push_logits = |plan: &mut Plan, logits: &wgpu::Buffer| {
        match f.post_norms {
            // The last layer's post-norm already normed x with output_norm.
            true => ends.push_head(plan, &a.xn, logits),
            false => ends.push_logits(plan, &a.x, &a.xn, logits, c.rms_eps),
        }
        if f.final_softcap > 0.0 {
            softcap::push(plan, logits, n_logits, f.final_softcap);
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
    let split_bytes = (f.layers.iter())
        .filter(|l| l.mixer == Mixer::Attention)
        .map(|l| {
            let splits = attention::splits(c.n_head, l.n_kv_head, gpu.adapter());
            attention::split_scratch_bytes(1, c.n_head, l.head_dim, splits)
        })
        .max()
        .unwrap_or(0);
    let parts = super::split_scratch(&gpu, n_ctx, split_bytes, runs).await?;
    let decode_long = super::split_step_plan(&gpu, parts.as_ref(), |parts| {
        decode_plan(Attention::Split(parts))
    })
    .await?;
    let final_norm = |plan: &mut Plan| {
        // The last layer's post-norm already normed x with output_norm.
        if !f.post_norms {
            ends.output_norm.push(plan, &a.x, &a.xn, d, c.rms_eps);
        }
    };
    let plans = super::prompt_plans(
        &gpu,
        &step,
        (runs, parts.as_ref()),
        n_logits,
        |plan, parts| {
            let attention = parts.map_or(Attention::Whole, Attention::Split);
            model.push_layers(plan, attention)
        },
        (final_norm, &a.xn, d),
        // The last layer's post-norm leaves the normed state in xn, which the head reads.
        (
            push_logits,
            if f.post_norms { &a.xn } else { &a.x },
            &logits,
        ),
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
        prefill: plans.prefill,
        prompt_head: plans.prompt_head,
        score: plans.score,
        hidden: plans.hidden,
        parallel: plans.parallel,
        step,
        logits,
        allowed: plans.allowed,
        n_vocab: c.n_vocab,
        n_logits,
        n_ctx_train: c.n_ctx_train,
        recurrent,
        pooled_projections,
        // Rows in place of embeddings go where the table's rows go; not into an encoder.
        embedding_rows: f.causal.then(|| (a.x.clone(), d)),
        multimodal_rope: f.layers.iter().any(|l| l.rope.sections.is_some()),
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
        names.push(format!("blk.{i}.attn_qkv.bias"));
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
    /// Rows added to each token's embedding (BERT's positions and token type): the table, and
    /// whether a token takes its position's row or the one row.
    positions: Option<&'a (wgpu::Buffer, bool)>,
    a: &'a Activations,
}

impl Model<'_> {
    /// The embedding lookup and every layer, for each token of the run. With post-norms, x leaves
    /// normed by output_norm in xn.
    fn push_layers(&self, plan: &mut Plan, attention: Attention) {
        let (c, f, a) = (self.c, self.f, self.a);
        let (d, eps) = (c.n_embd, c.rms_eps);
        embed::push(plan, &self.ends.token_embd, &a.x, f.embd_scale);
        if let Some((table, by_position)) = self.positions {
            add_position::push(plan, (table, *by_position), &a.x, d);
        }
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
            let attn_in = match i == 0 || !f.post_norms {
                true => b.attn_norm.input(plan, (&a.x, &a.xn), d, eps),
                false => Input::Rows(&a.xn),
            };
            match &b.mixing {
                Mixing::Attention(sa) => {
                    let rows = self_attention::Rows {
                        q: &a.q,
                        qkv: a.qkv.as_ref(),
                        out: &a.attn,
                    };
                    sa.push(plan, (c, f, layer), (attn_in, rows), &attention)
                }
                Mixing::DeltaNet(dn) => {
                    let shape = f.delta_net.expect("the family's DeltaNet shape");
                    let rows = a.qkv.as_ref().expect("rows for the DeltaNet projection");
                    dn.push(plan, shape, (attn_in, rows, &a.attn), eps);
                }
            }

            // attn_output, the residual add and ffn_norm.
            let ffn_in = match (&b.post_attention_norm, &a.sublayer) {
                (Some(post), Some(t)) => {
                    b.mixing.push_output(plan, &a.attn, (t, false));
                    let ffn_norm = (b.ffn_norm.rms(), &a.xn);
                    rms_norm::push_add_norm(plan, (t, post), &a.x, ffn_norm, d, eps);
                    Input::Rows(&a.xn)
                }
                _ => {
                    b.mixing.push_output(plan, &a.attn, (&a.x, true));
                    b.ffn_norm.input(plan, (&a.x, &a.xn), d, eps)
                }
            };

            // The feed-forward block and its residual add, then the per-layer embedding's part; the
            // layer's last kernel norms x for the next layer.
            let (ffn, act, scratch) = (&b.ffn, f.activation, &a.ffn);
            // Post-norm families' next norm: RMS, fused here.
            let next = || match self.blocks.get(i + 1) {
                Some(next) => next.attn_norm.rms(),
                None => self.ends.output_norm.rms(),
            };
            match (&b.post_ffw_norm, &a.sublayer, self.per_layer) {
                (Some(post), Some(t), Some(p)) => {
                    ffn.push(plan, act, ffn_in, scratch, (t, false));
                    // The norm of this sum is not read: the per-layer part norms its own.
                    rms_norm::push_add_norm(plan, (t, post), &a.x, (next(), &a.xn), d, eps);
                    p.push_layer(plan, i, (&a.x, b.out_scale), t, (next(), &a.xn));
                }
                (Some(post), Some(t), None) => {
                    ffn.push(plan, act, ffn_in, scratch, (t, false));
                    let x = (&a.x, b.out_scale);
                    rms_norm::push_add_scale_norm(plan, (t, post), x, (next(), &a.xn), d, eps);
                }
                _ => ffn.push(plan, act, ffn_in, scratch, (&a.x, true)),
            }
        }
        plan.layer_boundary();
    }
}

/// BERT's rows added to each token's embedding: token type 0's row (token_types) plus, where the
/// file has learned positions, its position's row (position_embd): a table of (n_ctx_train, n_embd),
/// or of one row. Token types other than 0 are never used, as in llama.cpp.
async fn position_rows(l: &mut Loader<'_>, c: &Config) -> Result<(wgpu::Buffer, bool), Error> {
    let d = c.n_embd as usize;
    let token_type = match l.has("token_types.weight") {
        true => {
            let n_types = l
                .meta
                .header
                .tensor("token_types.weight")
                .map_or(1, |t| t.rows());
            let all = l
                .host_f32("token_types.weight", &[c.n_embd, n_types as u32])
                .await?;
            all[..d].to_vec()
        }
        false => vec![0.0; d],
    };
    let (mut table, by_position) = match l.has("position_embd.weight") {
        true => {
            let shape = [c.n_embd, c.n_ctx_train];
            (l.host_f32("position_embd.weight", &shape).await?, true)
        }
        false => (vec![0.0; d], false),
    };
    for row in table.chunks_exact_mut(d) {
        for (v, t) in row.iter_mut().zip(&token_type) {
            *v += t;
        }
    }
    let buffer = crate::gpu::storage_buffer(&l.gpu, "position rows", bytemuck::cast_slice(&table));
    Ok((buffer, by_position))
}

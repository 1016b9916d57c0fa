//! The deepseek2 architecture (DeepSeek-V2/V2-Lite, Youtu-LLM, GLM-4.7-Flash): Multi-head Latent
//! Attention in absorbed form over one latent cache per layer, and mixture-of-experts feed-forward
//! layers after the leading dense ones.
//!
//! Per layer: the query, directly (attn_q) or through a low-rank bottleneck (attn_q_a, its norm,
//! attn_q_b); the compressed kv (attn_kv_a_mqa), whose latent part is normed and whose rope part is
//! rotated into the cache; each head's no-rope query taken into the latent space by k_b; attention over
//! the cache; the output taken out of the latent space by v_b, then attn_output. Files with the older
//! attn_kv_b get k_b and v_b derived from it once at load, in f16.
//!
//! MoE layers (feed_forward.rs): a router (ffn_gate_inp) chooses n_used experts by softmax or sigmoid
//! probability (plus exp_probs_b for choosing only); the chosen experts' outputs are summed by weight
//! into the residual with the shared experts'.
//!
//! Every run, a decode step or a prompt's chunk, goes through the same layers (`Model::push_layers`).

use super::feed_forward::{self, FeedForward, FfnScratch, MoeConfig};
use super::{Ends, Forward, Loader, PromptRuns};
use crate::gguf::GgmlType;
use crate::gpu::{scratch_buffer, GpuTensor, Plan, Shape, Stacked, StepInput};
use crate::ops::glu::Activation;
use crate::ops::matvec::{self, Input};
use crate::ops::mla::{self, Mla};
use crate::ops::moe_route::Gating;
use crate::ops::rms_norm::RmsNorm;
use crate::ops::rope::{Rope, Yarn};
use crate::ops::{attention, embed};
use crate::Error;

/// Hyperparameters, from GGUF metadata.
#[derive(Clone, Debug)]
pub struct Config {
    pub n_embd: u32,
    pub n_layer: u32,
    pub n_vocab: u32,
    pub rms_eps: f32,
    pub mla: Mla,
    /// 0: the query is one projection (attn_q).
    pub q_lora: u32,
    pub n_ff: u32,
    pub n_dense_lead: u32,
    pub moe: Option<MoeConfig>,
    pub n_ctx_train: u32,
}

impl Config {
    /// Rows of the query's first matrix: attn_q's (every head's query) or attn_q_a's (the
    /// bottleneck).
    fn q_first_rows(&self) -> u32 {
        match self.q_lora {
            0 => self.mla.n_head * self.mla.q_stride(),
            q_lora => q_lora,
        }
    }

    pub fn from_loader(l: &Loader) -> Result<Config, Error> {
        let n_embd = l.meta_u32("embedding_length")?;
        let n_head = l.meta_u32("attention.head_count")?;
        let kv_lora = l.meta_u32("attention.kv_lora_rank")?;
        let n_rot = l.meta_u32("rope.dimension_count")?;
        // Files for the absorbed form give the per-head sizes as *_mla and the latent sizes plainly.
        let key_length = l.meta_u32_or("attention.key_length_mla", 0)?;
        let key_length = match key_length {
            0 => l.meta_u32("attention.key_length")?,
            k => k,
        };
        let v_dim = match l.meta_u32_or("attention.value_length_mla", 0)? {
            0 => l.meta_u32("attention.value_length")?,
            v => v,
        };
        if key_length <= n_rot || n_rot % 4 != 0 || n_rot > 128 {
            return Err(Error::Model(format!(
                "a key of {key_length} with {n_rot} rope dimensions is not supported"
            )));
        }
        let q_nope = key_length - n_rot;
        if kv_lora > crate::gpu::MAX_LATENT {
            return Err(Error::Model(format!(
                "a kv_lora_rank of {kv_lora} is more than the {} the attention kernel holds",
                crate::gpu::MAX_LATENT
            )));
        }
        for (what, v) in [
            ("kv_lora_rank", kv_lora),
            ("the no-rope key", q_nope),
            ("the value", v_dim),
        ] {
            if v % 32 != 0 {
                return Err(Error::Model(format!(
                    "{what} ({v}) is not a multiple of 32"
                )));
            }
        }
        let freq_base = l.meta_f32_or("rope.freq_base", 10000.0)?;
        let n_ctx_train = l.meta_u32_or("context_length", 4096)?;
        let (freq_scale, yarn, mscale) = match l.meta_str("rope.scaling.type").unwrap_or("none") {
            "none" => (1.0, None, 1.0),
            "yarn" => {
                let factor = l.meta_f32_or("rope.scaling.factor", 1.0)?;
                let n_ctx_orig =
                    l.meta_u32_or("rope.scaling.original_context_length", n_ctx_train)?;
                let log_mul = l.meta_f32_or("rope.scaling.yarn_log_multiplier", 0.0)?;
                let freq_scale = 1.0 / factor;
                // As llama.cpp: the rotation keeps magnitude 1 (YaRN's own growth is cancelled) and the
                // attention scale takes mscale^2 instead.
                let grow = 1.0 + 0.1 * (1.0 / freq_scale).ln();
                let yarn = Yarn::new(n_rot, freq_base, n_ctx_orig, 1.0 / grow);
                (
                    freq_scale,
                    Some(yarn),
                    // Stored as 0.1 * DeepSeek's mscale_all_dim, as converted files have it:
                    // mscale = 0.1 mscale_all_dim ln(factor) + 1.
                    1.0 + log_mul * (1.0 / freq_scale).ln(),
                )
            }
            other => {
                return Err(Error::Model(format!(
                    "rope scaling {other:?} is not supported for deepseek2"
                )))
            }
        };
        let n_layer = l.meta_u32("block_count")?;
        let n_expert = l.meta_u32_or("expert_count", 0)?;
        let n_dense_lead = l
            .meta_u32_or("leading_dense_block_count", n_layer)?
            .min(n_layer);
        let moe = if n_expert > 0 && n_dense_lead < n_layer {
            let gating_func = l.meta_u32_or("expert_gating_func", 1)?;
            if !(1..=2).contains(&gating_func) {
                return Err(Error::Model(format!(
                    "metadata deepseek2.expert_gating_func: {gating_func} is not supported"
                )));
            }
            let n_used = l.meta_u32("expert_used_count")?;
            feed_forward::check_counts(&l.arch, n_expert, n_used)?;
            let scale = l.meta_f32_or("expert_weights_scale", 0.0)?;
            let n_ff = l.meta_u32("expert_feed_forward_length")?;
            Some(MoeConfig {
                gating: Gating {
                    n_expert,
                    n_used,
                    sigmoid: gating_func == 2,
                    normalize: l.meta_bool_or("expert_weights_norm", false)?,
                    scale: if scale == 0.0 { 1.0 } else { scale },
                },
                n_ff,
                n_ff_shared: n_ff * l.meta_u32_or("expert_shared_count", 0)?,
                shared_gate: false,
            })
        } else {
            None
        };
        Ok(Config {
            n_embd,
            n_layer,
            n_vocab: l
                .header
                .tensor("token_embd.weight")
                .map(|t| t.rows() as u32)
                .unwrap_or(0),
            rms_eps: l.meta_f32_or("attention.layer_norm_rms_epsilon", 1e-6)?,
            mla: Mla {
                n_head,
                kv_lora,
                q_nope,
                v_dim,
                rope: Rope {
                    n_rot,
                    freq_base,
                    freq_scale,
                    neox: false,
                    yarn,
                    sections: None,
                },
                scale: mscale * mscale / (key_length as f32).sqrt(),
                cache: l.kv_cache,
            },
            q_lora: l.meta_u32_or("attention.q_lora_rank", 0)?,
            n_ff: l.meta_u32_or("feed_forward_length", 0)?,
            n_dense_lead,
            moe,
            n_ctx_train,
        })
    }
}

/// The query's projection: one matrix (attn_q), or a low-rank bottleneck (attn_q_a) with a norm
/// and attn_q_b after it. Its first matrix is stacked with the compressed kv's (`Block::q_kv_a`).
enum QueryWeights {
    Direct,
    LowRank { a_norm: wgpu::Buffer, b: GpuTensor },
}

/// One block's weights, named as in GGUF, and its latent cache.
struct Block {
    attn_norm: wgpu::Buffer,
    q: QueryWeights,
    /// attn_q (or attn_q_a) and attn_kv_a_mqa, which read the same normed input: stacked where
    /// their types agree, so that they take one dispatch; the query's `Config::q_first_rows`
    /// rows first, then the compressed kv's kv_lora + n_rot.
    q_kv_a: Stacked,
    kv_a_norm: wgpu::Buffer,
    k_b: GpuTensor, // n_head x (kv_lora, q_nope)
    v_b: GpuTensor, // n_head x (v_dim, kv_lora)
    attn_output: GpuTensor,
    ffn_norm: wgpu::Buffer,
    ffn: FeedForward,
    cache: wgpu::Buffer, // (n_ctx, kv_lora + n_rot), as `Mla::cache` holds them
}

async fn load_block(l: &mut Loader<'_>, c: &Config, i: u32, n_ctx: u32) -> Result<Block, Error> {
    let name = |t: &str| format!("blk.{i}.{t}.weight");
    let m = &c.mla;
    let d = c.n_embd;
    let q_dim = m.n_head * m.q_stride();
    let q_first = match c.q_lora {
        0 => "attn_q",
        _ => "attn_q_a",
    };
    let names = [name(q_first), name("attn_kv_a_mqa")];
    let rows = [c.q_first_rows(), m.cache_width()];
    let q_kv_a = l.stacked(&names, d, &rows).await?;
    let q = match c.q_lora {
        0 => QueryWeights::Direct,
        _ => QueryWeights::LowRank {
            a_norm: l.vector(&name("attn_q_a_norm"), c.q_lora).await?,
            b: l.matrix(&name("attn_q_b"), c.q_lora, q_dim).await?,
        },
    };
    let (k_b, v_b) = if l.has(&name("attn_k_b")) {
        (
            l.matrices(&name("attn_k_b"), m.q_nope, m.kv_lora, m.n_head)
                .await?,
            l.matrices(&name("attn_v_b"), m.kv_lora, m.v_dim, m.n_head)
                .await?,
        )
    } else {
        split_kv_b(l, m, i).await?
    };
    let ffn = match (i < c.n_dense_lead, &c.moe) {
        (false, Some(moe)) => FeedForward::load_experts(l, i, d, moe).await?,
        _ => FeedForward::load_dense(l, i, d, c.n_ff).await?,
    };
    Ok(Block {
        attn_norm: l.vector(&name("attn_norm"), d).await?,
        q,
        q_kv_a,
        kv_a_norm: l.vector(&name("attn_kv_a_norm"), m.kv_lora).await?,
        k_b,
        v_b,
        attn_output: l
            .matrix(&name("attn_output"), m.n_head * m.v_dim, d)
            .await?,
        ffn_norm: l.vector(&name("ffn_norm"), d).await?,
        ffn,
        cache: scratch_buffer(&l.gpu, &format!("blk.{i}.cache"), m.cache_bytes(n_ctx)).await?,
    })
}

/// The older layout's attn_kv_b (per head: q_nope rows of k, then v_dim rows of v, each kv_lora wide)
/// as the absorbed form's k_b (per head: its k rows transposed, kv_lora rows of q_nope) and v_b, in f16.
async fn split_kv_b(l: &mut Loader<'_>, m: &Mla, i: u32) -> Result<(GpuTensor, GpuTensor), Error> {
    let (lora, nope, vd) = (m.kv_lora as usize, m.q_nope as usize, m.v_dim as usize);
    let name = format!("blk.{i}.attn_kv_b.weight");
    let kv_b_shape = [m.kv_lora, m.n_head * (m.q_nope + m.v_dim)];
    let kv_b = [(name.as_str(), &kv_b_shape[..])];
    let shape = |t: &str, row_len: u32, rows: u32| Shape {
        name: format!("blk.{i}.{t} (from attn_kv_b)"),
        ty: GgmlType::F16,
        row_len: row_len as u64,
        rows: (rows * m.n_head) as u64,
        group_rows: rows as u64,
    };
    let shapes = [
        shape("attn_k_b", m.q_nope, m.kv_lora),
        shape("attn_v_b", m.kv_lora, m.v_dim),
    ];
    let mut made = l
        .derived(&shapes, &kv_b, move |read| {
            let (mut k_b, mut v_b) = (Vec::new(), Vec::new());
            for head in read[0].chunks(lora * (nope + vd)) {
                let (k, v) = head.split_at(lora * nope);
                for c in 0..lora {
                    k_b.extend((0..nope).map(|r| half::f16::from_f32(k[r * lora + c])));
                }
                v_b.extend(v.iter().map(|&x| half::f16::from_f32(x)));
            }
            k_b.extend(v_b);
            bytemuck::cast_slice(&k_b).to_vec()
        })
        .await?;
    let v_b = made.pop().expect("two shapes, two tensors");
    let k_b = made.pop().expect("two shapes, two tensors");
    Ok((k_b, v_b))
}

/// The activations, f32, a row per token of the run.
struct Activations {
    x: wgpu::Buffer,            // (batch, n_embd) the residual stream
    xn: wgpu::Buffer,           // (batch, n_embd) normed
    q_low: wgpu::Buffer,        // (batch, q_lora) the query's bottleneck
    q_low_normed: wgpu::Buffer, // (batch, q_lora)
    q: wgpu::Buffer,            // (batch, n_head, q_stride)
    kv: wgpu::Buffer,           // (batch, kv_lora + n_rot) the compressed kv
    q_latent: wgpu::Buffer,     // (batch, n_head, kv_lora) the no-rope query through k_b
    attn_latent: wgpu::Buffer,  // (batch, n_head, kv_lora) attention's output, in the latent space
    attn: wgpu::Buffer,         // (batch, n_head * v_dim)
    ffn: FfnScratch,
}

/// Loads the weights, allocates the caches for `n_ctx` positions and the activations for `batch`
/// tokens, and builds the decode step and the prompt runs `runs` asks for.
pub async fn load(l: &mut Loader<'_>, n_ctx: u32, runs: PromptRuns) -> Result<Forward, Error> {
    let batch = runs.batch;
    let c = Config::from_loader(l)?;
    let m = c.mla;
    let d = c.n_embd;
    let gpu = l.gpu.clone();

    let ends = Ends::load(l, d, c.n_vocab, ("output_norm", false)).await?;
    let mut blocks = Vec::with_capacity(c.n_layer as usize);
    for i in 0..c.n_layer {
        blocks.push(load_block(l, &c, i, n_ctx).await?);
    }

    let rows = |label: &'static str, n: u32| {
        scratch_buffer(&gpu, label, batch as u64 * n.max(1) as u64 * 4)
    };
    let a = Activations {
        x: rows("x", d).await?,
        xn: rows("xn", d).await?,
        q_low: rows("q_low", c.q_lora).await?,
        q_low_normed: rows("q_low_normed", c.q_lora).await?,
        q: rows("q", m.n_head * m.q_stride()).await?,
        kv: rows("kv", m.cache_width()).await?,
        q_latent: rows("q_latent", m.n_head * m.kv_lora).await?,
        attn_latent: rows("attn_latent", m.n_head * m.kv_lora).await?,
        attn: rows("attn", m.n_head * m.v_dim).await?,
        ffn: FfnScratch::new(&gpu, (batch, d), c.n_ff, c.moe.as_ref()).await?,
    };
    let n_logits = l.n_logits(c.n_vocab);
    let logits = scratch_buffer(&gpu, "logits", n_logits as u64 * 4).await?;
    let step = StepInput::new(&gpu, batch);
    let rope_freqs = c.mla.rope.freqs_buffer(&gpu, None);
    let model = Model {
        c: &c,
        blocks: &blocks,
        rope_freqs: &rope_freqs,
        ends: &ends,
        a: &a,
    };

    let decode_plan = |split: Option<(u32, &wgpu::Buffer)>| {
        let mut plan = Plan::new(&gpu, &step, 1);
        model.push_layers(&mut plan, split);
        ends.push_logits(&mut plan, &a.x, &a.xn, &logits, c.rms_eps);
        plan
    };
    let mut decode = decode_plan(None);
    decode.finish(&gpu).await?;
    // Deep into a context, a decode step's attention split over the keys, as the dense block's: the
    // heads are few groups of 4 (4 workgroups for DeepSeek-V2-Lite's 16), which leave a GPU idle.
    let splits = attention::splits(m.n_head, 1, gpu.adapter());
    let bytes = attention::split_scratch_bytes(1, m.n_head, m.kv_lora, splits);
    let parts = super::split_scratch(&gpu, n_ctx, bytes, runs).await?;
    let decode_long = super::split_step_plan(&gpu, parts.as_ref(), |parts| {
        decode_plan(Some((splits, parts)))
    })
    .await?;
    let final_norm = |plan: &mut Plan| ends.output_norm.push(plan, &a.x, &a.xn, d, c.rms_eps);
    let plans = super::prompt_plans(
        &gpu,
        &step,
        (runs, parts.as_ref()),
        n_logits,
        |plan, parts| model.push_layers(plan, parts.map(|parts| (splits, parts))),
        (final_norm, &a.xn, d),
        (
            |plan: &mut Plan, logits: &wgpu::Buffer| {
                ends.push_logits(plan, &a.x, &a.xn, logits, c.rms_eps)
            },
            &a.x,
            &logits,
        ),
    )
    .await?;
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
        recurrent: Vec::new(),
        pooled_projections: Vec::new(),
        token_rows: None,
        // No projector feeds a deepseek2 model.
        embedding_rows: None,
        multimodal_rope: false,
    })
}

/// What the plans are made of.
struct Model<'a> {
    c: &'a Config,
    blocks: &'a [Block],
    /// Each rope pair's frequency.
    rope_freqs: &'a wgpu::Buffer,
    ends: &'a Ends,
    a: &'a Activations,
}

impl Model<'_> {
    /// The embedding lookup and every layer, for each token of the run; a decode step's attention
    /// split over the keys where `split` says how many ways, through its scratch.
    fn push_layers(&self, plan: &mut Plan, split: Option<(u32, &wgpu::Buffer)>) {
        let (c, a) = (self.c, self.a);
        let (d, eps) = (c.n_embd, c.rms_eps);
        embed::push(plan, &self.ends.token_embd, &a.x, 1.0);
        for b in self.blocks {
            plan.layer_boundary();
            // The query's and the compressed kv's product reads it: normed first, or on the way
            // in where the plan folds norms into products.
            let attn_in = Input::RmsNorm(RmsNorm {
                x: &a.x,
                gain: &b.attn_norm,
                xn: &a.xn,
                n: d,
                eps,
            })
            .for_pairs(plan);
            self.push_attention(plan, b, attn_in, split);
            matvec::push(plan, &b.attn_output, &a.attn, &a.x, true);
            let (x, gain, xn) = (&a.x, &b.ffn_norm, &a.xn);
            let ffn_in = Input::RmsNorm(RmsNorm {
                x,
                gain,
                xn,
                n: d,
                eps,
            });
            b.ffn
                .push(plan, Activation::Silu, ffn_in, &a.ffn, (&a.x, true));
        }
        plan.layer_boundary();
    }

    /// The query and the compressed kv from the layer's normed input `x`, the cache row, attention
    /// in the latent space (split over the keys where `split` says), and its output out of it into
    /// `attn`.
    fn push_attention(
        &self,
        plan: &mut Plan,
        b: &Block,
        x: Input,
        split: Option<(u32, &wgpu::Buffer)>,
    ) {
        let (c, a) = (self.c, self.a);
        let m = &c.mla;
        let q_first = match &b.q {
            QueryWeights::Direct => &a.q,
            QueryWeights::LowRank { .. } => &a.q_low,
        };
        matvec::push_apart(plan, &b.q_kv_a, x, [q_first, &a.kv], c.q_first_rows());
        if let QueryWeights::LowRank { a_norm, b: wb } = &b.q {
            let q_low = RmsNorm {
                x: &a.q_low,
                gain: a_norm,
                xn: &a.q_low_normed,
                n: c.q_lora,
                eps: c.rms_eps,
            };
            matvec::push(plan, wb, Input::RmsNorm(q_low), &a.q, false);
        }
        let norm = (&b.kv_a_norm, c.rms_eps);
        mla::push_kv(plan, m, &a.kv, norm, self.rope_freqs, &b.cache);
        let (lora, q_stride) = (m.kv_lora, m.q_stride());
        matvec::push_grouped(plan, &b.k_b, &a.q, &a.q_latent, false, lora, q_stride);
        let buffers = mla::AttentionBuffers {
            q_latent: &a.q_latent,
            q: &a.q,
            cache: &b.cache,
            freqs: self.rope_freqs,
            out: &a.attn_latent,
        };
        match split {
            Some((n_split, parts)) => mla::push_attention_split(plan, m, &buffers, n_split, parts),
            None => mla::push_attention(plan, m, &buffers),
        }
        matvec::push_grouped(plan, &b.v_b, &a.attn_latent, &a.attn, false, m.v_dim, lora);
    }
}

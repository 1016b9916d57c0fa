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
//! MoE layers: a router (ffn_gate_inp) chooses n_used experts by softmax or sigmoid probability (plus
//! exp_probs_b for choosing only); the chosen experts' gate, up and down run by index straight from the
//! stacked expert tensors, and their outputs are summed by weight into the residual with the shared
//! experts'.

use super::{Ends, Forward, Loader};
use crate::gguf::GgmlType;
use crate::gpu::{scratch_buffer, GpuTensor, Plan, Shape, StepInput};
use crate::ops::glu::{self, Activation, GateUp};
use crate::ops::matvec_id::{self, Experts, Output};
use crate::ops::mla::{self, Mla};
use crate::ops::moe_route::{self, Gating};
use crate::ops::rope::{Rope, Yarn};
use crate::ops::{embed, matvec, rms_norm};
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

#[derive(Clone, Copy, Debug)]
pub struct MoeConfig {
    pub gating: Gating,
    pub n_ff_expert: u32,
    pub n_shared: u32,
}

impl Config {
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
        if key_length <= n_rot || n_rot % 2 != 0 || n_rot > 128 {
            return Err(Error::Model(format!(
                "a key of {key_length} with {n_rot} rope dimensions is not supported"
            )));
        }
        let q_nope = key_length - n_rot;
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
            if !(1..=2).contains(&gating_func) || n_expert > moe_route::MAX_EXPERTS {
                return Err(Error::Model(format!(
                    "gating function {gating_func} over {n_expert} experts is not supported"
                )));
            }
            let scale = l.meta_f32_or("expert_weights_scale", 0.0)?;
            Some(MoeConfig {
                gating: Gating {
                    n_expert,
                    n_used: l.meta_u32("expert_used_count")?.clamp(1, n_expert),
                    sigmoid: gating_func == 2,
                    normalize: l.meta_bool_or("expert_weights_norm", false)?,
                    scale: if scale == 0.0 { 1.0 } else { scale },
                },
                n_ff_expert: l.meta_u32("expert_feed_forward_length")?,
                n_shared: l.meta_u32_or("expert_shared_count", 0)?,
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
                },
                scale: mscale * mscale / (key_length as f32).sqrt(),
            },
            q_lora: l.meta_u32_or("attention.q_lora_rank", 0)?,
            n_ff: l.meta_u32_or("feed_forward_length", 0)?,
            n_dense_lead,
            moe,
            n_ctx_train,
        })
    }
}

/// The query's projection: one matrix, or a low-rank bottleneck with a norm between.
enum QueryWeights {
    Direct(GpuTensor),
    LowRank {
        a: GpuTensor,
        a_norm: wgpu::Buffer,
        b: GpuTensor,
    },
}

enum FeedForward {
    Dense {
        gate_up: GateUp,
        down: GpuTensor,
    },
    Moe {
        router: GpuTensor,
        bias: Option<wgpu::Buffer>,
        gate: GpuTensor,
        up: GpuTensor,
        down: GpuTensor,
        /// The shared experts' gate and up, and their down.
        shared: Option<(GateUp, GpuTensor)>,
    },
}

/// One block's weights, named as in GGUF, and its latent cache.
struct Block {
    attn_norm: wgpu::Buffer,
    q: QueryWeights,
    kv_a: GpuTensor, // (kv_lora + n_rot, n_embd)
    kv_a_norm: wgpu::Buffer,
    k_b: GpuTensor, // n_head x (kv_lora, q_nope)
    v_b: GpuTensor, // n_head x (v_dim, kv_lora)
    attn_output: GpuTensor,
    ffn_norm: wgpu::Buffer,
    ffn: FeedForward,
    cache: wgpu::Buffer, // (n_ctx, kv_lora + n_rot)
}

async fn load_block(l: &mut Loader<'_>, c: &Config, i: u32, n_ctx: u32) -> Result<Block, Error> {
    let name = |t: &str| format!("blk.{i}.{t}.weight");
    let m = &c.mla;
    let d = c.n_embd;
    let q_dim = m.n_head * m.q_stride();
    let q = if c.q_lora == 0 {
        QueryWeights::Direct(l.matrix(&name("attn_q"), d, q_dim).await?)
    } else {
        QueryWeights::LowRank {
            a: l.matrix(&name("attn_q_a"), d, c.q_lora).await?,
            a_norm: l.vector(&name("attn_q_a_norm"), c.q_lora).await?,
            b: l.matrix(&name("attn_q_b"), c.q_lora, q_dim).await?,
        }
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
    let ffn = if i < c.n_dense_lead {
        FeedForward::Dense {
            gate_up: l
                .gate_up([&name("ffn_gate"), &name("ffn_up")], d, c.n_ff)
                .await?,
            down: l.matrix(&name("ffn_down"), c.n_ff, d).await?,
        }
    } else {
        let moe = c.moe.expect("MoE layers come with an MoE config");
        let (n, f) = (moe.gating.n_expert, moe.n_ff_expert);
        let bias_name = format!("blk.{i}.exp_probs_b.bias");
        let shared = if moe.n_shared > 0 {
            let fs = f * moe.n_shared;
            let gate_up = [&name("ffn_gate_shexp"), &name("ffn_up_shexp")];
            Some((
                l.gate_up(gate_up.map(|n| n.as_str()), d, fs).await?,
                l.matrix(&name("ffn_down_shexp"), fs, d).await?,
            ))
        } else {
            None
        };
        FeedForward::Moe {
            router: l.matrix(&name("ffn_gate_inp"), d, n).await?,
            bias: match l.has(&bias_name) {
                true => Some(l.vector(&bias_name, n).await?),
                false => None,
            },
            gate: l.matrices(&name("ffn_gate_exps"), d, f, n).await?,
            up: l.matrices(&name("ffn_up_exps"), d, f, n).await?,
            down: l.matrices(&name("ffn_down_exps"), f, d, n).await?,
            shared,
        }
    };
    let width = m.cache_width() as u64;
    Ok(Block {
        attn_norm: l.vector(&name("attn_norm"), d).await?,
        q,
        kv_a: l.matrix(&name("attn_kv_a_mqa"), d, m.cache_width()).await?,
        kv_a_norm: l.vector(&name("attn_kv_a_norm"), m.kv_lora).await?,
        k_b,
        v_b,
        attn_output: l
            .matrix(&name("attn_output"), m.n_head * m.v_dim, d)
            .await?,
        ffn_norm: l.vector(&name("ffn_norm"), d).await?,
        ffn,
        cache: scratch_buffer(&l.gpu, &format!("blk.{i}.cache"), n_ctx as u64 * width * 4).await?,
    })
}

/// The older layout's attn_kv_b (per head: q_nope rows of k, then v_dim rows of v, each kv_lora wide)
/// as the absorbed form's k_b (per head: its k rows transposed, kv_lora rows of q_nope) and v_b, in f16.
async fn split_kv_b(l: &mut Loader<'_>, m: &Mla, i: u32) -> Result<(GpuTensor, GpuTensor), Error> {
    let (lora, nope, vd) = (m.kv_lora as usize, m.q_nope as usize, m.v_dim as usize);
    let name = format!("blk.{i}.attn_kv_b.weight");
    let kv_b = l
        .host_f32(&name, &[m.kv_lora, m.n_head * (m.q_nope + m.v_dim)])
        .await?;
    let (mut k_b, mut v_b) = (Vec::new(), Vec::new());
    for head in kv_b.chunks(lora * (nope + vd)) {
        let (k, v) = head.split_at(lora * nope);
        for c in 0..lora {
            k_b.extend((0..nope).map(|r| half::f16::from_f32(k[r * lora + c])));
        }
        v_b.extend(v.iter().map(|&x| half::f16::from_f32(x)));
    }
    let shape = |t: &str, row_len: u32, rows: u32| Shape {
        name: format!("blk.{i}.{t} (from attn_kv_b)"),
        ty: GgmlType::F16,
        row_len: row_len as u64,
        rows: (rows * m.n_head) as u64,
        group_rows: rows as u64,
    };
    Ok((
        GpuTensor::from_host(
            &l.gpu,
            &shape("attn_k_b", m.q_nope, m.kv_lora),
            bytemuck::cast_slice(&k_b),
        )
        .await?,
        GpuTensor::from_host(
            &l.gpu,
            &shape("attn_v_b", m.kv_lora, m.v_dim),
            bytemuck::cast_slice(&v_b),
        )
        .await?,
    ))
}

/// Loads the weights, allocates the caches and activations for `n_ctx` positions, and builds the plan.
pub async fn load(l: &mut Loader<'_>, n_ctx: u32) -> Result<Forward, Error> {
    let c = Config::from_loader(l)?;
    let m = c.mla;
    let d = c.n_embd;
    let gpu = l.gpu.clone();

    let ends = Ends::load(l, d, c.n_vocab).await?;
    let mut blocks = Vec::with_capacity(c.n_layer as usize);
    for i in 0..c.n_layer {
        blocks.push(load_block(l, &c, i, n_ctx).await?);
    }

    // Activations, f32.
    let f32s = |label: &'static str, n: u32| scratch_buffer(&gpu, label, n.max(1) as u64 * 4);
    let x = f32s("x", d).await?;
    let xn = f32s("xn", d).await?;
    let q_low = f32s("q_low", c.q_lora).await?;
    let q_low_n = f32s("q_low_normed", c.q_lora).await?;
    let q = f32s("q", m.n_head * m.q_stride()).await?;
    let kv = f32s("kv", m.cache_width()).await?;
    let q_latent = f32s("q_latent", m.n_head * m.kv_lora).await?;
    let attn_latent = f32s("attn_latent", m.n_head * m.kv_lora).await?;
    let attn = f32s("attn", m.n_head * m.v_dim).await?;
    let scores = scratch_buffer(&gpu, "scores", m.n_head as u64 * n_ctx as u64 * 4).await?;
    let (n_used, n_ff_expert, n_shared_ff) = c.moe.map_or((0, 0, 0), |e| {
        (e.gating.n_used, e.n_ff_expert, e.n_ff_expert * e.n_shared)
    });
    let n_hidden = c.n_ff.max(n_used * n_ff_expert).max(n_shared_ff);
    let gate = f32s("gate", n_hidden).await?;
    let up = f32s("up", n_hidden).await?;
    let hidden = f32s("hidden", n_hidden).await?;
    let gate_up = f32s("gate_up", 2 * n_hidden).await?; // the stacked gate and up's output
    let router_logits = f32s("router_logits", c.moe.map_or(1, |e| e.gating.n_expert)).await?;
    let route = f32s("route", 2 * n_used.max(1)).await?;
    let logits = f32s("logits", c.n_vocab).await?;
    let step = StepInput::new(&gpu, 1);

    // MLA's kernels take one token at a time, so this model has a decode plan only.
    let mut plan = Plan::new(&gpu, &step, 1);
    embed::push(&mut plan, &ends.token_embd, &x, 1.0);
    for b in &blocks {
        plan.layer_boundary();
        rms_norm::push(&mut plan, &x, &b.attn_norm, &xn, d, c.rms_eps);
        match &b.q {
            QueryWeights::Direct(w) => matvec::push(&mut plan, w, &xn, &q, false),
            QueryWeights::LowRank { a, a_norm, b: wb } => {
                matvec::push(&mut plan, a, &xn, &q_low, false);
                rms_norm::push(&mut plan, &q_low, a_norm, &q_low_n, c.q_lora, c.rms_eps);
                matvec::push(&mut plan, wb, &q_low_n, &q, false);
            }
        }
        matvec::push(&mut plan, &b.kv_a, &xn, &kv, false);
        mla::push_kv(&mut plan, &m, &kv, &b.kv_a_norm, c.rms_eps, &b.cache);
        matvec::push_grouped(
            &mut plan,
            &b.k_b,
            &q,
            &q_latent,
            false,
            m.kv_lora,
            m.q_stride(),
        );
        let buffers = mla::AttentionBuffers {
            q_latent: &q_latent,
            q: &q,
            cache: &b.cache,
            scores: &scores,
            out: &attn_latent,
        };
        mla::push_attention(&mut plan, &m, n_ctx, &buffers);
        matvec::push_grouped(
            &mut plan,
            &b.v_b,
            &attn_latent,
            &attn,
            false,
            m.v_dim,
            m.kv_lora,
        );
        matvec::push(&mut plan, &b.attn_output, &attn, &x, true);
        rms_norm::push(&mut plan, &x, &b.ffn_norm, &xn, d, c.rms_eps);
        match &b.ffn {
            FeedForward::Dense { gate_up: gu, down } => {
                glu::push_ffn(
                    &mut plan,
                    Activation::Silu,
                    (gu, down),
                    &xn,
                    (&gate_up, &hidden),
                    (&x, true),
                );
            }
            FeedForward::Moe {
                router,
                bias,
                gate: g,
                up: u,
                down,
                shared,
            } => {
                let moe = c.moe.expect("MoE layers come with an MoE config");
                matvec::push(&mut plan, router, &xn, &router_logits, false);
                moe_route::push(
                    &mut plan,
                    &moe.gating,
                    &router_logits,
                    bias.as_ref(),
                    &route,
                );
                let experts = Experts {
                    rows: moe.n_ff_expert,
                    n_slots: moe.gating.n_used,
                    route: &route,
                };
                matvec_id::push(&mut plan, g, &experts, &xn, 0, &gate, Output::PerSlot);
                matvec_id::push(&mut plan, u, &experts, &xn, 0, &up, Output::PerSlot);
                glu::push(
                    &mut plan,
                    Activation::Silu,
                    &gate,
                    &up,
                    &hidden,
                    n_used * n_ff_expert,
                );
                let down_experts = Experts { rows: d, ..experts };
                matvec_id::push(
                    &mut plan,
                    down,
                    &down_experts,
                    &hidden,
                    n_ff_expert,
                    &x,
                    Output::WeightedSum,
                );
                if let Some((gu, down)) = shared {
                    glu::push_ffn(
                        &mut plan,
                        Activation::Silu,
                        (gu, down),
                        &xn,
                        (&gate_up, &hidden),
                        (&x, true),
                    );
                }
            }
        }
    }
    plan.layer_boundary();
    ends.push_logits(&mut plan, &x, &xn, &logits, c.rms_eps);
    plan.finish(&gpu).await?;
    Ok(Forward {
        decode: plan,
        decode_long: None,
        prefill: None,
        score: None,
        step,
        logits,
        n_vocab: c.n_vocab,
        n_ctx_train: c.n_ctx_train,
    })
}

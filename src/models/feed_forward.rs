//! A block's feed-forward sublayer, from the normed residual xn into the residual: one gated MLP
//! (dense), or a mixture of experts. There a router on the GPU chooses each token's experts
//! (ops::moe_route), which run straight from the stacked expert tensors (ops::moe: by index for one
//! token, grouped by expert for a prompt's chunk) and are summed by weight into the residual, with a
//! shared expert beside them: always on (DeepSeek) or scaled by the sigmoid of a gate of its own
//! (Qwen3.5), whose row rides along with the router's so that one product makes both. Where the file
//! has them, the router's logits and each expert's gate, up and down are biased (gpt-oss).

use super::loader::interleaving_halves;
use super::{Loader, Meta};
use crate::gpu::{scratch_buffer, Gpu, GpuTensor, Plan, Stacked};
use crate::ops::glu::{self, Activation, GateUp};
use crate::ops::matvec::{self, Input};
use crate::ops::moe::{self, ExpertBiases, ExpertWeights, ExpertsGateUp, MoeBuffers, MoeShape};
use crate::ops::moe_route::{self, Gating, RouterBiases};
use crate::ops::sigmoid_gate;
use crate::Error;

/// The experts of a model's mixture-of-experts layers.
#[derive(Clone, Copy, Debug)]
pub struct MoeConfig {
    pub gating: Gating,
    /// One routed expert's width.
    pub n_ff: u32,
    /// The shared experts' width together; 0: none.
    pub n_ff_shared: u32,
    /// The shared expert's output is scaled by the sigmoid of ffn_gate_inp_shexp . xn (Qwen3.5).
    pub shared_gate: bool,
}

impl MoeConfig {
    /// expert_count, expert_used_count, expert_feed_forward_length (one value, or one per layer that
    /// agree) and expert_shared_feed_forward_length, with the family's way of weighing its choices;
    /// `n_ff_dense` stands in for a missing expert width as llama.cpp has it (n_ff / n_used).
    pub fn from_meta(m: &Meta, weigh: Weighing, n_ff_dense: u32) -> Result<MoeConfig, Error> {
        let n_expert = m.meta_u32("expert_count")?;
        let n_used = m.meta_u32("expert_used_count")?;
        check_counts(&m.arch, n_expert, n_used)?;
        let n_layer = m.meta_u32("block_count")?;
        let default = Some(n_ff_dense / n_used);
        let widths = m.per_layer("expert_feed_forward_length", n_layer, default)?;
        let n_ff = widths[0];
        if widths.iter().any(|&w| w != n_ff) || n_ff == 0 {
            return Err(Error::Model(format!(
                "metadata {}.expert_feed_forward_length: experts of widths {widths:?} are not supported",
                m.arch
            )));
        }
        let scale = m.meta_f32_or("expert_weights_scale", 0.0)?;
        Ok(MoeConfig {
            gating: Gating {
                n_expert,
                n_used,
                sigmoid: weigh == Weighing::SigmoidAsIs,
                normalize: weigh == Weighing::SoftmaxNormalized,
                scale: if scale == 0.0 { 1.0 } else { scale },
            },
            n_ff,
            n_ff_shared: m.meta_u32_or("expert_shared_feed_forward_length", 0)?,
            shared_gate: false,
        })
    }

    /// For `wick info`.
    pub fn describe(&self) -> String {
        let g = &self.gating;
        let weights = match (g.sigmoid, g.normalize) {
            (false, true) => "softmax, the chosen renormalized",
            (false, false) => "softmax",
            (true, true) => "sigmoid, the chosen renormalized",
            (true, false) => "sigmoid",
        };
        let mut line = format!(
            "mixture of experts: {} experts of width {}, {} per token ({weights}",
            g.n_expert, self.n_ff, g.n_used
        );
        if g.scale != 1.0 {
            line += &format!(", scaled by {}", g.scale);
        }
        line += ")";
        if self.n_ff_shared > 0 {
            line += &format!(
                "; a shared expert of width {}{}",
                self.n_ff_shared,
                match self.shared_gate {
                    true => " behind a sigmoid gate",
                    false => "",
                }
            );
        }
        line
    }
}

/// How a family turns the router's logits into its experts' weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weighing {
    /// Softmax over all experts, the chosen experts' probabilities divided by their sum (Qwen3).
    SoftmaxNormalized,
    /// Softmax over all experts, the chosen experts' probabilities as they are.
    SoftmaxAsIs,
    /// Each expert's sigmoid, as it is.
    SigmoidAsIs,
}

/// Expert counts the router can take.
pub fn check_counts(arch: &str, n_expert: u32, n_used: u32) -> Result<(), Error> {
    if n_expert == 0 || n_expert > moe_route::MAX_EXPERTS {
        return Err(Error::Model(format!(
            "metadata {arch}.expert_count: {n_expert} experts (the router takes 1 to {})",
            moe_route::MAX_EXPERTS
        )));
    }
    if n_used == 0 || n_used > n_expert {
        return Err(Error::Model(format!(
            "metadata {arch}.expert_used_count: {n_used} experts per token of {n_expert}"
        )));
    }
    Ok(())
}

/// One block's feed-forward weights.
pub enum FeedForward {
    /// ffn_gate and ffn_up (interleaved where they agree in type), ffn_down.
    Dense {
        gate_up: GateUp,
        down: GpuTensor,
    },
    /// ffn_up and ffn_down with no gate (BERT), each biased where the file has its bias: h = act(up xn
    /// + b_up), made by the gated kernel with a row of ones for up.
    Plain(Box<Plain>),
    Experts(Box<Experts>),
}

/// An ungated feed-forward block's weights.
pub struct Plain {
    up: GpuTensor,
    up_bias: Option<wgpu::Buffer>,
    down: GpuTensor,
    down_bias: Option<wgpu::Buffer>,
    /// (n_ff) ones: the "up" of act(gate) * up.
    ones: wgpu::Buffer,
}

/// A mixture-of-experts layer's weights.
pub struct Experts {
    config: MoeConfig,
    /// ffn_gate_inp's rows, then ffn_gate_inp_shexp's where the shared expert is gated: (batch, n_expert
    /// (+ 1)) logits.
    router: Stacked,
    /// exp_probs_b: added to the probabilities for choosing only (DeepSeek-V3).
    selection_bias: Option<wgpu::Buffer>,
    gate_up: ExpertsGateUp,
    down: GpuTensor,
    biases: Option<Biases>,
    shared: Option<SharedExpert>,
}

/// ffn_gate_inp.bias (n_expert), then ffn_{gate,up}_exps.bias (n_expert, n_ff each) interleaved as the
/// weights are, (n_expert, 2 n_ff), and ffn_down_exps.bias (n_expert, n_embd).
struct Biases {
    router: wgpu::Buffer,
    gate_up: wgpu::Buffer,
    down: wgpu::Buffer,
}

struct SharedExpert {
    gate_up: GateUp,
    down: GpuTensor,
    /// Scaled by the sigmoid of ffn_gate_inp_shexp . xn, the router's last logit.
    gated: bool,
}

impl FeedForward {
    /// Layer `i`'s MLP of width `n_ff` over `n_embd`: gated, by ffn_gate and ffn_up or both in ffn_up,
    /// gate first (Phi-3); or ungated where ffn_up alone is n_ff rows (BERT), with biases where the
    /// file has them.
    pub async fn load_dense(
        l: &mut Loader<'_>,
        i: u32,
        n_embd: u32,
        n_ff: u32,
    ) -> Result<FeedForward, Error> {
        let name = |t: &str| format!("blk.{i}.{t}.weight");
        let bias = |t: &str| format!("blk.{i}.{t}.bias");
        let gated = l.has(&name("ffn_gate"))
            || l.meta.header.tensor(&name("ffn_up")).map(|t| t.rows()) != Some(n_ff as u64);
        if !gated {
            let up = l.matrix(&name("ffn_up"), n_embd, n_ff).await?;
            let up_bias = match l.has(&bias("ffn_up")) {
                true => Some(l.vector(&bias("ffn_up"), n_ff).await?),
                false => None,
            };
            let down = l.matrix(&name("ffn_down"), n_ff, n_embd).await?;
            let down_bias = match l.has(&bias("ffn_down")) {
                true => Some(l.vector(&bias("ffn_down"), n_embd).await?),
                false => None,
            };
            let ones = vec![1.0f32; n_ff as usize];
            let ones = crate::gpu::storage_buffer(&l.gpu, "ones", bytemuck::cast_slice(&ones));
            return Ok(FeedForward::Plain(Box::new(Plain {
                up,
                up_bias,
                down,
                down_bias,
                ones,
            })));
        }
        if let Some(b) = ["ffn_up", "ffn_down"]
            .map(bias)
            .into_iter()
            .find(|b| l.has(b))
        {
            return Err(Error::Model(format!(
                "tensor {b}: biases on a gated feed-forward block are not supported"
            )));
        }
        let gate_up = match l.has(&name("ffn_gate")) {
            true => {
                l.gate_up([&name("ffn_gate"), &name("ffn_up")], n_embd, n_ff)
                    .await?
            }
            false => l.gate_up_fused(&name("ffn_up"), n_embd, n_ff).await?,
        };
        Ok(FeedForward::Dense {
            gate_up,
            down: l.matrix(&name("ffn_down"), n_ff, n_embd).await?,
        })
    }

    /// Layer `i`'s experts: ffn_gate_inp, the stacked ffn_{gate,up,down}_exps, exp_probs_b where the
    /// file has it, and the shared expert's ffn_{gate,up,down}_shexp with ffn_gate_inp_shexp where the
    /// file has it.
    pub async fn load_experts(
        l: &mut Loader<'_>,
        i: u32,
        n_embd: u32,
        config: &MoeConfig,
    ) -> Result<FeedForward, Error> {
        let name = |t: &str| format!("blk.{i}.{t}.weight");
        let (n, f, d) = (config.gating.n_expert, config.n_ff, n_embd);
        let gated = config.n_ff_shared > 0 && config.shared_gate;
        let router = match gated {
            true => {
                let names = [name("ffn_gate_inp"), name("ffn_gate_inp_shexp")];
                l.stacked(&names, d, &[n, 1]).await?
            }
            false => l.stacked(&[name("ffn_gate_inp")], d, &[n]).await?,
        };
        let bias_name = format!("blk.{i}.exp_probs_b.bias");
        let selection_bias = match l.has(&bias_name) {
            true => Some(l.vector(&bias_name, n).await?),
            false => None,
        };
        // The converter's optional fused layout (--fuse-gate-up-exps), or the two tensors.
        let fused = name("ffn_gate_up_exps");
        let gate_up = match l.has(&fused) {
            true => l.gate_up_experts_fused(&fused, d, f, n).await?,
            false => {
                let (gate, up) = (name("ffn_gate_exps"), name("ffn_up_exps"));
                l.gate_up_experts([&gate, &up], d, f, n).await?
            }
        };
        let down = l.matrices(&name("ffn_down_exps"), f, d, n).await?;
        let bias = |t: &str| format!("blk.{i}.{t}.bias");
        let biases = match l.has(&bias("ffn_gate_inp")) {
            false => None,
            // The router's bias is added to its rows alone.
            true if gated => {
                return Err(Error::Model(format!(
                    "layer {i}: a router bias beside a gated shared expert is not supported"
                )))
            }
            true if matches!(gate_up, ExpertsGateUp::Apart { .. }) => {
                return Err(Error::Model(format!(
                    "layer {i}: experts' biases with gate and up of two types are not supported"
                )))
            }
            true => Some(Biases {
                router: l.vector(&bias("ffn_gate_inp"), n).await?,
                gate_up: gate_up_biases(l, i, f, n).await?,
                down: l.vectors(&bias("ffn_down_exps"), d, n).await?,
            }),
        };
        let shared = match config.n_ff_shared {
            0 => None,
            fs => Some(SharedExpert {
                gate_up: l
                    .gate_up([&name("ffn_gate_shexp"), &name("ffn_up_shexp")], d, fs)
                    .await?,
                down: l.matrix(&name("ffn_down_shexp"), fs, d).await?,
                gated,
            }),
        };
        Ok(FeedForward::Experts(Box::new(Experts {
            config: *config,
            router,
            selection_bias,
            gate_up,
            down,
            biases,
            shared,
        })))
    }

    /// Adds the sublayer for each token of the run: `act` of the gate times up, from `xn` into `y`
    /// (added to it where `accumulate`). Experts always add into y, the residual. A dense gated
    /// block may norm xn on the way in (`Input::for_pairs`); the others read its rows.
    pub fn push(
        &self,
        plan: &mut Plan,
        act: Activation,
        xn: Input,
        s: &FfnScratch,
        (y, accumulate): (&wgpu::Buffer, bool),
    ) {
        let dense_scratch = (&s.gate_up, &s.hidden);
        let e = match self {
            FeedForward::Dense { gate_up, down } => {
                let ffn = (gate_up, down);
                glu::push_ffn(plan, act, ffn, xn, dense_scratch, (y, accumulate));
                return;
            }
            FeedForward::Plain(p) => {
                let xn = xn.rows(plan);
                let n_ff = p.up.rows;
                match &p.up_bias {
                    Some(b) => matvec::push_biased(plan, &p.up, xn, (&s.gate_up, false), b),
                    None => matvec::push(plan, &p.up, xn, &s.gate_up, false),
                }
                let (h, ones) = ((&s.gate_up, 0, n_ff), (&p.ones, 0, 0));
                glu::push_rows(plan, act, h, ones, (&s.hidden, n_ff));
                match &p.down_bias {
                    Some(b) => matvec::push_biased(plan, &p.down, &s.hidden, (y, accumulate), b),
                    None => matvec::push(plan, &p.down, &s.hidden, y, accumulate),
                }
                return;
            }
            FeedForward::Experts(e) => e,
        };
        assert!(accumulate, "experts add into the residual");
        let xn = moe::input(plan, &e.gate_up, xn);
        let g = &e.config.gating;
        matvec::push_stacked(plan, &e.router, xn, &s.router_logits);
        let logits = (&s.router_logits, e.router.rows);
        let biases = RouterBiases {
            logits: e.biases.as_ref().map(|b| &b.router),
            selection: e.selection_bias.as_ref(),
        };
        moe_route::push(plan, g, logits, biases, &s.route);
        let shape = MoeShape {
            n_expert: g.n_expert,
            n_used: g.n_used,
            n_embd: e.down.rows / g.n_expert,
            n_ff: e.config.n_ff,
            activation: act,
        };
        let weights = ExpertWeights {
            gate_up: &e.gate_up,
            down: &e.down,
            biases: e.biases.as_ref().map(|b| ExpertBiases {
                gate_up: &b.gate_up,
                down: &b.down,
            }),
        };
        let buffers = MoeBuffers {
            route: &s.route,
            groups: &s.groups,
            gate: &s.gate,
            up: &s.up,
            hidden: &s.hidden,
            out: &s.expert_out,
        };
        // Every product that reads xn runs before the first that adds into y, the residual: where
        // they norm it on the way in, they read y itself.
        moe::push_hidden(plan, shape, &weights, xn, &buffers);
        let shared_scratch = (&s.gate_up, &s.shared_hidden);
        if let Some(sh) = &e.shared {
            glu::push_hidden(plan, act, &sh.gate_up, xn, shared_scratch);
        }
        moe::push_down(plan, shape, &weights, &buffers, y);
        if let Some(sh) = &e.shared {
            if sh.gated {
                // down(sigmoid(gate) h) = sigmoid(gate) down(h): the gate scales h.
                let gate = (&s.router_logits, e.router.rows, g.n_expert);
                sigmoid_gate::push_per_row(plan, &s.shared_hidden, sh.gate_up.n_ff(), gate);
            }
            matvec::push(plan, &sh.down, &s.shared_hidden, y, true);
        }
    }
}

/// The sublayer's scratch, a row per token of the largest run, as wide as the widest layer needs.
pub struct FfnScratch {
    gate_up: wgpu::Buffer,       // (batch, 2 n_ff) gate and up where kept apart
    hidden: wgpu::Buffer,        // (batch, max(n_ff, n_used n_ff_expert))
    shared_hidden: wgpu::Buffer, // (batch, n_ff_shared) a shared expert's h, beside the experts'
    gate: wgpu::Buffer,          // (batch, n_used 2 n_ff_expert) experts' gate and up per slot
    up: wgpu::Buffer,            // (batch, n_used n_ff_expert) up, where apart
    router_logits: wgpu::Buffer, // (batch, n_expert + 1)
    route: wgpu::Buffer,         // (batch, 2 n_used)
    groups: wgpu::Buffer,        // the chunk's tokens by expert
    expert_out: wgpu::Buffer,    // (batch, n_used, n_embd) each slot's down, before the sum
}

impl FfnScratch {
    /// For runs of up to `batch` tokens through dense layers up to `n_ff` wide and experts of `moe`.
    pub async fn new(
        gpu: &Gpu,
        (batch, n_embd): (u32, u32),
        n_ff: u32,
        moe: Option<&MoeConfig>,
    ) -> Result<FfnScratch, Error> {
        let rows = |label: &'static str, n: u32| {
            scratch_buffer(gpu, label, batch as u64 * n.max(1) as u64 * 4)
        };
        let (n_expert, n_used, n_ff_expert, n_ff_shared) = moe.map_or((0, 0, 0, 0), |m| {
            let g = m.gating;
            (g.n_expert, g.n_used, m.n_ff, m.n_ff_shared)
        });
        let n_slots = n_used * n_ff_expert;
        Ok(FfnScratch {
            gate_up: rows("gate_up", 2 * n_ff.max(n_ff_shared)).await?,
            hidden: rows("hidden", n_ff.max(n_slots)).await?,
            shared_hidden: rows("shared expert hidden", n_ff_shared).await?,
            gate: rows("expert gate", 2 * n_slots).await?,
            up: rows("expert up", n_slots).await?,
            router_logits: rows("router_logits", n_expert + 1).await?,
            route: rows("route", 2 * n_used).await?,
            groups: scratch_buffer(
                gpu,
                "expert groups",
                moe::groups_len(n_expert.max(1), batch) * 4,
            )
            .await?,
            expert_out: match (moe, batch) {
                (Some(_), 2..) => rows("expert_out", n_used * n_embd).await?,
                _ => scratch_buffer(gpu, "expert_out", 4).await?,
            },
        })
    }
}

/// Layer `i`'s experts' gate and up biases (`n` rows of `len` each), their values interleaved as the
/// weights' rows are: (n, 2 len). From ffn_gate_exps.bias and ffn_up_exps.bias, or the converter's
/// fused ffn_gate_up_exps.bias (each expert's gate values, then its up values).
async fn gate_up_biases(
    l: &mut Loader<'_>,
    i: u32,
    len: u32,
    n: u32,
) -> Result<wgpu::Buffer, Error> {
    let bias = |t: &str| format!("blk.{i}.{t}.bias");
    let floats = 2 * len as usize * n as usize;
    let fused = bias("ffn_gate_up_exps");
    if l.has(&fused) {
        let order = interleaving_halves(len, n);
        let interleave =
            move |read: Vec<Vec<f32>>| order.iter().map(|&j| read[0][j as usize]).collect();
        return l
            .floats(&fused, &[(&fused, &[2 * len, n])], floats, interleave)
            .await;
    }
    let (gate, up) = (bias("ffn_gate_exps"), bias("ffn_up_exps"));
    let shape: &[u32] = &[len, n];
    let interleave = |read: Vec<Vec<f32>>| {
        let (g, u) = (&read[0], &read[1]);
        g.iter().zip(u).flat_map(|(&g, &u)| [g, u]).collect()
    };
    l.floats(&gate, &[(&gate, shape), (&up, shape)], floats, interleave)
        .await
}

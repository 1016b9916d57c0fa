//! A mixture-of-experts router (shaders/moe_route.wgsl): probabilities from the logits (biased, where
//! the router has a bias), top-k with an optional selection bias, weights.

use crate::gpu::{Kernel, PipelineKey, Plan};

/// The most experts a router may choose among (the kernel's private arrays).
pub const MAX_EXPERTS: u32 = 256;

/// How a layer turns router logits into chosen experts and weights (llama.cpp's build_moe_ffn).
#[derive(Clone, Copy, Debug)]
pub struct Gating {
    pub n_expert: u32,
    pub n_used: u32,
    /// Sigmoid probabilities; softmax otherwise.
    pub sigmoid: bool,
    /// Weights divided by their sum before scaling.
    pub normalize: bool,
    pub scale: f32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n_expert: u32,
    n_used: u32,
    sigmoid: u32,
    normalize: u32,
    scale: f32,
    has_bias: u32,
    logits_stride: u32,
    has_logit_bias: u32,
}

/// A router's optional biases: one added to its logits before the probabilities (gpt-oss's router
/// bias), and one that only picks the experts, not their weights (DeepSeek's selection bias).
#[derive(Clone, Copy, Default)]
pub struct RouterBiases<'a> {
    pub logits: Option<&'a wgpu::Buffer>,
    pub selection: Option<&'a wgpu::Buffer>,
}

/// Adds the router for each token of the run: `logits` (batch, stride: n_expert and any more values a
/// row carries) and its `biases` (each n_expert) into `route` (batch, (n_used) ids then (n_used) f32
/// weights).
pub fn push(
    plan: &mut Plan,
    g: &Gating,
    (logits, logits_stride): (&wgpu::Buffer, u32),
    biases: RouterBiases,
    route: &wgpu::Buffer,
) {
    assert!(g.n_expert <= MAX_EXPERTS && g.n_used <= g.n_expert && logits_stride >= g.n_expert);
    let p = Params {
        n_expert: g.n_expert,
        n_used: g.n_used,
        sigmoid: g.sigmoid as u32,
        normalize: g.normalize as u32,
        scale: g.scale,
        has_bias: biases.selection.is_some() as u32,
        logits_stride,
        has_logit_bias: biases.logits.is_some() as u32,
    };
    let step = plan.step.clone();
    plan.push(
        PipelineKey {
            workgroup: 64,
            ..PipelineKey::new(Kernel::MoeRoute, None)
        },
        &[
            logits,
            biases.selection.unwrap_or(logits),
            route,
            &step,
            biases.logits.unwrap_or(logits),
        ],
        super::params(&p),
        [plan.batch, 1, 1],
    );
}

/// CPU reference: the chosen ids and their weights, from logits with any router bias already added.
pub fn reference(g: &Gating, logits: &[f32], bias: Option<&[f32]>) -> (Vec<u32>, Vec<f32>) {
    let prob: Vec<f64> = if g.sigmoid {
        logits
            .iter()
            .map(|&l| 1.0 / (1.0 + (-l as f64).exp()))
            .collect()
    } else {
        let top = logits.iter().cloned().fold(f32::MIN, f32::max) as f64;
        let e: Vec<f64> = logits.iter().map(|&l| (l as f64 - top).exp()).collect();
        let sum: f64 = e.iter().sum();
        e.iter().map(|v| v / sum).collect()
    };
    let score = |e: usize| prob[e] + bias.map_or(0.0, |b| b[e] as f64);
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_by(|&a, &b| score(b).total_cmp(&score(a)));
    let ids: Vec<u32> = order[..g.n_used as usize]
        .iter()
        .map(|&e| e as u32)
        .collect();
    let total: f64 = ids.iter().map(|&e| prob[e as usize]).sum();
    let norm = if g.normalize {
        1.0 / total.max(6.103515625e-5)
    } else {
        1.0
    };
    let weights = ids
        .iter()
        .map(|&e| (prob[e as usize] * norm * g.scale as f64) as f32)
        .collect();
    (ids, weights)
}

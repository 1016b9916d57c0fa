//! A mixture-of-experts feed-forward block after its router (ops::moe_route): the chosen experts' gate
//! and up, the gated activation, down, and the sum of their outputs by weight into the residual. One
//! token reads its experts by index (shaders/matvec_id.wgsl; gate, up and the activation in one
//! dispatch, shaders/matvec_id_glu.wgsl, where gate and up are interleaved). A prompt's chunk first lists its tokens by
//! the expert they were routed to (shaders/moe_group.wgsl), then runs each expert once over its list as a
//! tiled matrix product (shaders/matmul_id.wgsl, or matmul_id_coop.wgsl on matrix cores), so an
//! expert's weights are dequantized once for a tile of its tokens rather than once per token, and sums
//! at the end (shaders/moe_combine.wgsl).
//! Experts' biases ride in a token's products (matvec_id adds each slot's expert's row); a chunk adds
//! them in dispatches of their own (ops::bias), paid once for all its tokens.
//! A token's gate and up in one dispatch may norm x on the way in, as the dense products do
//! (`input`): then the block's norm has no dispatch of its own.

use super::bias::{self, Rows};
use super::glu::{self, Activation};
use super::matvec::Input;
use super::matvec_id::{self, Experts, Output};
use crate::gpu::{GpuTensor, Groups, Kernel, MatvecShape, PipelineKey, Plan};

/// The stacked experts' matrices: gate and up as loaded (n_expert * n_ff rows of n_embd each), down
/// (n_expert * n_embd rows of n_ff); and each expert's biases where the model has them (gpt-oss).
pub struct ExpertWeights<'a> {
    pub gate_up: &'a ExpertsGateUp,
    pub down: &'a GpuTensor,
    pub biases: Option<ExpertBiases<'a>>,
}

/// The experts' gate and up, as loaded.
pub enum ExpertsGateUp {
    /// Of one type, their rows interleaved: expert e's gate row r, then its up row r, at rows
    /// 2 (e n_ff + r) and 2 (e n_ff + r) + 1. A token's h comes out of one dispatch
    /// (`matvec_id::Output::Glu`), a chunk's out of one product over the experts' lists and the
    /// activation.
    Interleaved(GpuTensor),
    /// Of two types, each stacked apart.
    Apart { gate: GpuTensor, up: GpuTensor },
}

/// (n_expert, 2 n_ff): gate's and up's biases interleaved as their weights are (the experts have
/// biases only with gate and up of one type); (n_expert, n_embd) for down.
#[derive(Clone, Copy)]
pub struct ExpertBiases<'a> {
    pub gate_up: &'a wgpu::Buffer,
    pub down: &'a wgpu::Buffer,
}

/// What the block reads and writes, each with a row per token of the run.
pub struct MoeBuffers<'a> {
    /// (batch, n_used ids then n_used f32 weights), as moe_route writes it.
    pub route: &'a wgpu::Buffer,
    /// `groups_len` u32: each expert's tokens (a run of more than one token).
    pub groups: &'a wgpu::Buffer,
    /// (batch, n_used * 2 n_ff): gate's and up's outputs per slot, interleaved as their weights are;
    /// gate's alone, in the first half, where up is apart.
    pub gate: &'a wgpu::Buffer,
    /// (batch, n_used * n_ff) each: up's outputs per slot where it is apart, and the activation.
    pub up: &'a wgpu::Buffer,
    pub hidden: &'a wgpu::Buffer,
    /// (batch, n_used * n_embd): each slot's down output before the sum (a run of more than one
    /// token).
    pub out: &'a wgpu::Buffer,
}

/// The shape of the block.
#[derive(Clone, Copy, Debug)]
pub struct MoeShape {
    pub n_expert: u32,
    pub n_used: u32,
    pub n_embd: u32,
    pub n_ff: u32,
    pub activation: Activation,
}

/// u32s of the expert lists of a run of `batch` tokens: a count per expert, then a list per expert.
pub fn groups_len(n_expert: u32, batch: u32) -> u64 {
    n_expert as u64 * (1 + batch as u64)
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct GroupParams {
    n_expert: u32,
    n_used: u32,
    max_items: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct MatmulIdParams {
    rows: u32,
    cols: u32,
    row_bytes: u32,
    first_row: u32,
    part_rows: u32,
    n_expert: u32,
    n_used: u32,
    max_items: u32,
    x_per_item: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct CombineParams {
    n: u32,
    n_used: u32,
}

/// The block's x as every product that reads it should take it (the router's, a shared expert's,
/// the experts'): where one token's gate and up are one product (`ExpertsGateUp::Interleaved`), a
/// norm stays the products' to do where the plan folds norms into them (`Input::for_pairs`); where
/// they are not, or the run has more tokens, its rows, normed once for all of them.
pub fn input<'a>(plan: &mut Plan, gate_up: &ExpertsGateUp, xn: Input<'a>) -> Input<'a> {
    match (plan.batch, gate_up) {
        (1, ExpertsGateUp::Interleaved(_)) => xn.for_pairs(plan),
        _ => Input::Rows(xn.rows(plan)),
    }
}

/// The block's first half for each token of the run: each slot's h into `b.hidden`, from `xn`
/// (batch, n_embd), normed (or the norm's to make, as `input` gives it). Every product that reads x
/// (a shared expert's too) runs before `push_down` adds into the residual: one that norms x on the
/// way in reads the residual itself.
pub fn push_hidden(plan: &mut Plan, s: MoeShape, w: &ExpertWeights, xn: Input, b: &MoeBuffers) {
    match plan.batch {
        1 => token_hidden(plan, &s, w, xn, b),
        _ => {
            let xn = xn.rows(plan);
            chunk_hidden(plan, &s, w, xn, b)
        }
    }
}

/// The block's second half: down of each slot's h, summed by weight into the residual `x` (batch,
/// n_embd), which it adds to.
pub fn push_down(
    plan: &mut Plan,
    s: MoeShape,
    w: &ExpertWeights,
    b: &MoeBuffers,
    x: &wgpu::Buffer,
) {
    match plan.batch {
        1 => {
            let down = token_experts(&s, b, s.n_embd, w.biases.map(|b| b.down));
            let sum = Output::WeightedSum;
            matvec_id::push(plan, w.down, &down, b.hidden, s.n_ff, x, sum);
        }
        _ => chunk_down(plan, &s, w, b, x),
    }
}

/// One token's experts of `rows` rows each, read by index, each product with its expert's bias.
fn token_experts<'a>(
    s: &MoeShape,
    b: &MoeBuffers<'a>,
    rows: u32,
    bias: Option<&'a wgpu::Buffer>,
) -> Experts<'a> {
    Experts {
        rows,
        n_slots: s.n_used,
        route: b.route,
        bias,
    }
}

/// One token's h: in one dispatch where gate and up are interleaved (which may norm x on the way
/// in), from the two products apart and the activation otherwise.
fn token_hidden(plan: &mut Plan, s: &MoeShape, w: &ExpertWeights, xn: Input, b: &MoeBuffers) {
    match w.gate_up {
        ExpertsGateUp::Interleaved(gate_up) => {
            let experts = token_experts(s, b, s.n_ff, w.biases.map(|b| b.gate_up));
            let glu = Output::Glu(s.activation);
            matvec_id::push(plan, gate_up, &experts, xn, 0, b.hidden, glu);
        }
        ExpertsGateUp::Apart { gate, up } => {
            let apart = token_experts(s, b, s.n_ff, None);
            let xn = xn.rows(plan);
            matvec_id::push(plan, gate, &apart, xn, 0, b.gate, Output::PerSlot);
            matvec_id::push(plan, up, &apart, xn, 0, b.up, Output::PerSlot);
            glu_apart(plan, s, b);
        }
    }
}

/// The gated activation of each slot's gate and up (apart), into h.
fn glu_apart(plan: &mut Plan, s: &MoeShape, b: &MoeBuffers) {
    let n_hidden = s.n_used * s.n_ff;
    glu::push(plan, s.activation, b.gate, b.up, b.hidden, n_hidden);
}

/// A chunk's h: its tokens listed by expert, each expert's gate and up over its list.
fn chunk_hidden(
    plan: &mut Plan,
    s: &MoeShape,
    w: &ExpertWeights,
    xn: &wgpu::Buffer,
    b: &MoeBuffers,
) {
    let step = plan.step.clone();
    let p = GroupParams {
        n_expert: s.n_expert,
        n_used: s.n_used,
        max_items: plan.batch,
    };
    let key = PipelineKey {
        workgroup: 256,
        ..PipelineKey::new(Kernel::MoeGroup, None)
    };
    plan.push(
        key,
        &[b.route, b.groups, &step],
        super::params(&p),
        [1, 1, 1],
    );
    let (route, n_used) = (b.route, s.n_used);
    match w.gate_up {
        ExpertsGateUp::Interleaved(gate_up) => {
            let both = (gate_up, 2 * s.n_ff);
            push_by_expert(plan, s, both, (xn, false), b.groups, b.gate);
            if let Some(biases) = &w.biases {
                let rows = Rows::PerSlot { n_used, route };
                bias::push(plan, biases.gate_up, rows, b.gate, 2 * s.n_ff);
            }
            let hidden = (b.hidden, n_used * s.n_ff);
            glu::push_interleaved(plan, s.activation, b.gate, hidden);
        }
        ExpertsGateUp::Apart { gate, up } => {
            push_by_expert(plan, s, (gate, s.n_ff), (xn, false), b.groups, b.gate);
            push_by_expert(plan, s, (up, s.n_ff), (xn, false), b.groups, b.up);
            glu_apart(plan, s, b);
        }
    }
}

/// A chunk's down: each expert over its list, the slots summed at the end.
fn chunk_down(plan: &mut Plan, s: &MoeShape, w: &ExpertWeights, b: &MoeBuffers, x: &wgpu::Buffer) {
    let step = plan.step.clone();
    let (route, n_used) = (b.route, s.n_used);
    push_by_expert(
        plan,
        s,
        (w.down, s.n_embd),
        (b.hidden, true),
        b.groups,
        b.out,
    );
    let p = CombineParams {
        n: s.n_embd,
        n_used: s.n_used,
    };
    plan.push(
        PipelineKey::new(Kernel::MoeCombine, None),
        &[b.out, b.route, x, &step],
        super::params(&p),
        Groups::per_token(s.n_embd.div_ceil(64)),
    );
    // Each expert's down bias, weighted as its output was.
    if let Some(biases) = &w.biases {
        let rows = Rows::WeightedSum { n_used, route };
        bias::push(plan, biases.down, rows, x, s.n_embd);
    }
}

/// Each expert's matrix (`rows` rows of it in the stacked tensor) over its listed items, y: (items,
/// rows). x has a row per token, or per item where `per_item`. The tile is tuned per shape and chunk
/// size, as the dense products' are.
fn push_by_expert(
    plan: &mut Plan,
    s: &MoeShape,
    (w, rows): (&GpuTensor, u32),
    (x, per_item): (&wgpu::Buffer, bool),
    groups: &wgpu::Buffer,
    y: &wgpu::Buffer,
) {
    let shape = MatvecShape::chunk(
        Kernel::MatmulId,
        w.ty,
        (w.row_len, rows),
        s.n_expert,
        plan.batch,
    );
    for part in &w.parts {
        let p = MatmulIdParams {
            rows,
            cols: w.row_len,
            row_bytes: w.row_bytes,
            first_row: part.first_row,
            part_rows: part.rows,
            n_expert: s.n_expert,
            n_used: s.n_used,
            max_items: plan.batch,
            x_per_item: per_item as u32,
        };
        plan.push_matvec(shape, &[&part.buffer, x, groups, y], super::params(&p));
    }
    // A chunk reads at most every expert, and no more experts than its tokens chose.
    let read = s.n_expert.min(plan.batch * s.n_used) as u64;
    plan.weight_bytes += w.bytes() * read / s.n_expert as u64;
}

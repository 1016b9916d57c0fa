//! h = activation(gate) * up (or gpt-oss's clamped variant), and the gated feed-forward block built on
//! it (SwiGLU with silu, GeGLU with GELU). Where gate and up share a type, their rows are interleaved at load and h comes straight out
//! of their projection (shaders/store_glu.wgsl); otherwise, and for the experts' outputs,
//! shaders/glu.wgsl makes h from gate's and up's outputs.

use super::matvec::Input;
pub use crate::gpu::Activation;
use crate::gpu::{GpuTensor, Groups, Kernel, PipelineKey, Plan, Stacked, Store, TensorPart};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    g_offset: u32,
    u_offset: u32,
    g_stride: u32,
    u_stride: u32,
    spacing: u32,
}

/// Adds `h = act(g) * u` to the plan for each token row. g, u, h: (batch, n) f32.
pub fn push(
    plan: &mut Plan,
    act: Activation,
    g: &wgpu::Buffer,
    u: &wgpu::Buffer,
    h: &wgpu::Buffer,
    n: u32,
) {
    push_rows(plan, act, (g, 0, n), (u, 0, n), (h, n));
}

/// As `push`, reading g and u each from its own offset in rows of its own stride: (buffer, offset,
/// values per token row).
pub fn push_rows(
    plan: &mut Plan,
    act: Activation,
    (g, g_offset, g_stride): (&wgpu::Buffer, u32, u32),
    (u, u_offset, u_stride): (&wgpu::Buffer, u32, u32),
    (h, n): (&wgpu::Buffer, u32),
) {
    let p = Params {
        n,
        g_offset,
        u_offset,
        g_stride,
        u_stride,
        spacing: 1,
    };
    push_params(plan, act, (g, u, h), p);
}

/// Adds h = act(g) * u for each token row, from gate's and up's values interleaved in `gate_up`
/// (rows of 2 `n` values: g at even places, u at odd) into `h` (rows of `n`).
pub fn push_interleaved(
    plan: &mut Plan,
    act: Activation,
    gate_up: &wgpu::Buffer,
    (h, n): (&wgpu::Buffer, u32),
) {
    let p = Params {
        n,
        g_offset: 0,
        u_offset: 1,
        g_stride: 2 * n,
        u_stride: 2 * n,
        spacing: 2,
    };
    push_params(plan, act, (gate_up, gate_up, h), p);
}

fn push_params(
    plan: &mut Plan,
    act: Activation,
    (g, u, h): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
    p: Params,
) {
    let n = p.n;
    let step = plan.step.clone();
    plan.push(
        PipelineKey::new(Kernel::Glu(act), None),
        &[g, u, h, &step],
        super::params(&p),
        Groups::per_token(n.div_ceil(64)),
    );
}

pub fn reference(act: Activation, g: &[f32], u: &[f32]) -> Vec<f32> {
    g.iter().zip(u).map(|(&g, &u)| act.glu(g, u)).collect()
}

/// A gated block's gate and up projections, as loaded.
pub enum GateUp {
    /// Of one type, their rows interleaved (gate 0, up 0, gate 1, up 1, ...): one pass makes h.
    Interleaved(GpuTensor),
    /// Of two types, stacked: each writes its half of a (gate | up) row, then glu.wgsl makes h.
    Apart(Stacked),
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct StoreParams {
    rows: u32,
    cols: u32,
    row_bytes: u32,
    out_offset: u32,
    out_stride: u32,
}

impl GateUp {
    /// Values of h per token: n_ff.
    pub fn n_ff(&self) -> u32 {
        match self {
            GateUp::Interleaved(w) => w.rows / 2,
            GateUp::Apart(s) => s.rows / 2,
        }
    }
}

/// A gated feed-forward block: y = down(act(gate xn) * up xn), added to y when `accumulate` (the
/// residual add); xn's norm, where it has one, is done as `Input::for_pairs` says. `gate_up_out` (batch, 2 n_ff) is scratch for gate and up kept apart, `hidden`
/// (batch, n_ff) for h.
pub fn push_ffn(
    plan: &mut Plan,
    act: Activation,
    (gate_up, down): (&GateUp, &GpuTensor),
    xn: Input,
    (gate_up_out, hidden): (&wgpu::Buffer, &wgpu::Buffer),
    (y, accumulate): (&wgpu::Buffer, bool),
) {
    push_hidden(plan, act, gate_up, xn, (gate_up_out, hidden));
    super::matvec::push(plan, down, hidden, y, accumulate);
}

/// The block's h = act(gate xn) * up xn into `hidden` (batch, n_ff), before down.
pub fn push_hidden(
    plan: &mut Plan,
    act: Activation,
    gate_up: &GateUp,
    xn: Input,
    (gate_up_out, hidden): (&wgpu::Buffer, &wgpu::Buffer),
) {
    let n_ff = gate_up.n_ff();
    match gate_up {
        GateUp::Interleaved(w) => {
            let params = |part: &TensorPart| {
                let p = StoreParams {
                    rows: part.rows,
                    cols: w.row_len,
                    row_bytes: w.row_bytes,
                    out_offset: part.first_row / 2,
                    out_stride: n_ff,
                };
                super::params(&p).to_vec()
            };
            super::matvec::push_pairs(plan, w, xn, Store::Glu(act), &[hidden], params);
        }
        GateUp::Apart(stacked) => {
            super::matvec::push_stacked(plan, stacked, xn, gate_up_out);
            let (gate, up) = ((gate_up_out, 0, 2 * n_ff), (gate_up_out, n_ff, 2 * n_ff));
            push_rows(plan, act, gate, up, (hidden, n_ff));
        }
    }
}

//! Matvecs over the experts a router chose, read by index (shaders/matvec_id.wgsl), and h made
//! straight from gate's and up's rows interleaved (shaders/matvec_id_glu.wgsl), which may norm x on
//! the way in.

use super::matvec::Input;
use crate::gpu::{Activation, GpuTensor, Kernel, MatvecShape, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cols: u32,
    row_bytes: u32,
    first_row: u32,
    part_rows: u32,
    n_slots: u32,
    x_slot_stride: u32,
    combine: u32,
    has_bias: u32,
}

/// What the chosen experts read and write.
pub struct Experts<'a> {
    /// Rows of one expert in the stacked tensor.
    pub rows: u32,
    /// Experts chosen per token.
    pub n_slots: u32,
    /// (n_slots) ids, then (n_slots) f32 weights, as moe_route writes them.
    pub route: &'a wgpu::Buffer,
    /// The experts' biases, (n_expert, rows), where they have them: each slot's expert's row added
    /// to its product (before the weighting, in a weighted sum).
    pub bias: Option<&'a wgpu::Buffer>,
}

/// How the slots' outputs come out (b_e: expert e's bias row, or 0).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// y[s * rows + r] = (W_{e_s} x_s + b_{e_s})[r]
    PerSlot,
    /// y[r] += sum_s weight_s (W_{e_s} x_s + b_{e_s})[r]
    WeightedSum,
    /// y[s * rows + r] = glu(z[2 r], z[2 r + 1]), z = W_{e_s} x + b_{e_s}: W holds gate's and up's
    /// rows interleaved, 2 rows for each of an expert's `rows` values of h (and b likewise); every
    /// slot reads the one x.
    Glu(Activation),
}

/// Adds the chosen experts' matvecs: slot s reads x from float s * `x_slot_stride` (0: all one x).
/// Where x is a norm's (`Input::RmsNorm`), `Output::Glu` norms it on the way in as `Input::for_pairs`
/// says; the other outputs read the norm's rows.
pub fn push<'a>(
    plan: &mut Plan,
    w: &GpuTensor,
    experts: &Experts,
    x: impl Into<Input<'a>>,
    x_slot_stride: u32,
    y: &wgpu::Buffer,
    output: Output,
) {
    assert!(x_slot_stride.is_multiple_of(4));
    let items = match output {
        Output::PerSlot | Output::Glu(_) => experts.rows * experts.n_slots,
        Output::WeightedSum => experts.rows,
    };
    if let Output::Glu(act) = output {
        assert_eq!(x_slot_stride, 0, "every slot's gate and up read the one x");
        return push_glu(plan, w, experts, act, x.into(), y, items);
    }
    let x = x.into().rows(plan);
    // A matvec shape of its own: the tuner times its kernel shapes as it does the dense ones'
    // (threads per row, workgroup, the sum by subgroup, the K-quants' block form, 8-bit x). Slots
    // that read x of their own read rows of it side by side, as a workgroup on 8-bit x quantizes them.
    assert!(
        x_slot_stride == 0 || x_slot_stride == w.row_len,
        "the slots' x are one or side by side"
    );
    let shape = MatvecShape {
        matrices: if x_slot_stride == 0 {
            1
        } else {
            experts.n_slots
        },
        ..MatvecShape::of(Kernel::MatvecId, w.ty, w.row_len, items)
    };
    for part in &w.parts {
        let p = Params {
            rows: experts.rows,
            cols: w.row_len,
            row_bytes: w.row_bytes,
            first_row: part.first_row,
            part_rows: part.rows,
            n_slots: experts.n_slots,
            x_slot_stride: x_slot_stride / 4,
            combine: (output == Output::WeightedSum) as u32,
            has_bias: experts.bias.is_some() as u32,
        };
        let bias = experts.bias.unwrap_or(experts.route);
        let buffers = [&part.buffer, x, y, experts.route, bias];
        plan.push_matvec(shape, &buffers, super::params(&p));
    }
    // Only the chosen experts' rows are read.
    let n_expert = (w.rows / experts.rows) as u64;
    plan.weight_bytes += w.bytes() * experts.n_slots as u64 / n_expert.max(1);
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct GluParams {
    rows: u32,
    cols: u32,
    row_bytes: u32,
    first_row: u32,
    part_rows: u32,
    n_slots: u32,
    has_bias: u32,
}

/// `Output::Glu`'s dispatches: `items` values of h, each from a pair of W's rows.
fn push_glu(
    plan: &mut Plan,
    w: &GpuTensor,
    experts: &Experts,
    act: Activation,
    x: Input,
    h: &wgpu::Buffer,
    items: u32,
) {
    let (x, norm, gain) = x.bound(plan, w);
    let kernel = Kernel::MatvecIdGlu(act, norm);
    let shape = MatvecShape::of(kernel, w.ty, w.row_len, items);
    for part in &w.parts {
        assert!(
            part.first_row % 2 == 0 && part.rows % 2 == 0,
            "{}: a part splits a pair of rows",
            w.name
        );
        let p = GluParams {
            rows: experts.rows,
            cols: w.row_len,
            row_bytes: w.row_bytes,
            first_row: part.first_row,
            part_rows: part.rows,
            n_slots: experts.n_slots,
            has_bias: experts.bias.is_some() as u32,
        };
        let bias = experts.bias.unwrap_or(experts.route);
        let mut buffers = vec![&part.buffer, x, h, experts.route, bias];
        // The norm's gain binds last (`gpu::NORM_GAIN_BINDING`).
        buffers.extend(gain);
        plan.push_matvec(shape, &buffers, super::params(&p));
    }
    let n_expert = (w.rows / (2 * experts.rows)) as u64;
    plan.weight_bytes += w.bytes() * experts.n_slots as u64 / n_expert.max(1);
}

/// CPU reference. `w`: (n_expert * rows, cols) dequantized, where rows is y's length (WeightedSum) or
/// y's length / the slots (PerSlot); (n_expert * 2 rows, cols), gate's and up's rows interleaved, for
/// Glu; `bias`: a row per row of `w`, if any; `ids`, `weights`: the route.
pub fn reference(
    (w, bias): (&[f32], Option<&[f32]>),
    cols: usize,
    (ids, weights): (&[u32], &[f32]),
    x: &[f32],
    x_slot_stride: usize,
    y: &mut [f32],
    output: Output,
) {
    let rows = match output {
        Output::PerSlot | Output::Glu(_) => y.len() / ids.len(),
        Output::WeightedSum => y.len(),
    };
    for (s, &e) in ids.iter().enumerate() {
        let xs = &x[s * x_slot_stride..s * x_slot_stride + cols];
        // Row g of the stacked tensor, times x, plus its bias.
        let z = |g: usize| {
            let row = &w[g * cols..][..cols];
            row.iter().zip(xs).map(|(a, b)| a * b).sum::<f32>() + bias.map_or(0.0, |b| b[g])
        };
        for r in 0..rows {
            let g = e as usize * rows + r;
            match output {
                Output::PerSlot => y[s * rows + r] = z(g),
                Output::WeightedSum => y[r] += weights[s] * z(g),
                Output::Glu(act) => y[s * rows + r] = act.glu(z(2 * g), z(2 * g + 1)),
            }
        }
    }
}

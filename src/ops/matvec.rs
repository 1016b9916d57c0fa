//! y = W x on packed weights (shaders/matvec.wgsl).

use crate::gpu::{grid, GpuTensor, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cols: u32,
    row_bytes: u32,
    out_offset: u32,
    accumulate: u32,
}

/// Adds `y = W x` (or `y += W x` when `accumulate`) to the plan, one dispatch per part of W.
/// x: (W.row_len) f32, y: (W.rows) f32.
pub fn push(plan: &mut Plan, w: &GpuTensor, x: &wgpu::Buffer, y: &wgpu::Buffer, accumulate: bool) {
    for part in &w.parts {
        let p = Params {
            rows: part.rows,
            cols: w.row_len,
            row_bytes: w.row_bytes,
            out_offset: part.first_row,
            accumulate: accumulate as u32,
        };
        plan.push(PipelineKey::new(Kernel::Matvec, Some(w.ty)), &[&part.buffer, x, y], super::params(&p), grid(part.rows));
    }
    plan.weight_bytes += w.bytes();
}

/// CPU reference: `w` is (rows, cols) already dequantized.
pub fn reference(w: &[f32], x: &[f32], y: &mut [f32], accumulate: bool) {
    let cols = x.len();
    for (r, out) in y.iter_mut().enumerate() {
        let dot: f32 = w[r * cols..(r + 1) * cols].iter().zip(x).map(|(a, b)| a * b).sum();
        *out = if accumulate { *out + dot } else { dot };
    }
}

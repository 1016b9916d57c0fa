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
    group_rows: u32,
    group_stride: u32,
}

/// Adds `y = W x` (or `y += W x` when `accumulate`) to the plan, one dispatch per part of W.
/// x: (W.row_len) f32, y: (W.rows) f32.
pub fn push(plan: &mut Plan, w: &GpuTensor, x: &wgpu::Buffer, y: &wgpu::Buffer, accumulate: bool) {
    push_grouped(plan, w, x, y, accumulate, w.rows, 0);
}

/// As `push`, for W's rows in groups of `group_rows` that each read their own x: group g reads x from
/// float g * `group_stride` (a multiple of 4). Per-head matrices stacked in one tensor work so.
pub fn push_grouped(
    plan: &mut Plan,
    w: &GpuTensor,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
    accumulate: bool,
    group_rows: u32,
    group_stride: u32,
) {
    assert!(group_stride % 4 == 0 && group_rows > 0);
    let key = PipelineKey {
        threads_per_row: Some(threads_per_row(w.row_len)),
        ..PipelineKey::new(Kernel::Matvec, Some(w.ty))
    };
    let rows_per_workgroup = key.workgroup / threads_per_row(w.row_len);
    for part in &w.parts {
        let p = Params {
            rows: part.rows,
            cols: w.row_len,
            row_bytes: w.row_bytes,
            out_offset: part.first_row,
            accumulate: accumulate as u32,
            group_rows,
            group_stride: group_stride / 4,
        };
        plan.push(
            key,
            &[&part.buffer, x, y],
            super::params(&p),
            grid(part.rows.div_ceil(rows_per_workgroup)),
        );
    }
    plan.weight_bytes += w.bytes();
}

/// Threads sharing a row: enough to give each a 32-weight chunk or more, so short rows (576 weights in
/// SmolLM2) do not leave most of a workgroup idle.
pub(crate) fn threads_per_row(cols: u32) -> u32 {
    let chunks = (cols / 32).max(1);
    (1u32 << chunks.ilog2()).min(64)
}

/// CPU reference: `w` is (rows, cols) already dequantized.
pub fn reference(w: &[f32], x: &[f32], y: &mut [f32], accumulate: bool) {
    let cols = x.len();
    for (r, out) in y.iter_mut().enumerate() {
        let dot: f32 = w[r * cols..(r + 1) * cols]
            .iter()
            .zip(x)
            .map(|(a, b)| a * b)
            .sum();
        *out = if accumulate { *out + dot } else { dot };
    }
}

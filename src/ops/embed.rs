//! The rows of a packed embedding table for the run's tokens (shaders/embed.wgsl).

use crate::gpu::{GpuTensor, Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cols: u32,
    row_bytes: u32,
    first_row: u32,
    scale: f32,
    /// The row that ids past the table read (`NO_ROW`: none; their rows are left alone).
    past_table: u32,
    table_rows: u32,
}

const NO_ROW: u32 = u32::MAX;

/// Adds `out[t] = table[token t] * scale` to the plan. out: (batch, table.row_len) f32. A token
/// past the table (a row given in place of an embedding, `Engine::hold_image`) has its row left alone.
pub fn push(plan: &mut Plan, table: &GpuTensor, out: &wgpu::Buffer, scale: f32) {
    push_reading(plan, table, out, scale, NO_ROW);
}

/// As `push`, a token past the table reading row `past_table` (Gemma 4's per-layer rows of an
/// image's tokens are the padding token's).
pub fn push_reading(
    plan: &mut Plan,
    table: &GpuTensor,
    out: &wgpu::Buffer,
    scale: f32,
    past_table: u32,
) {
    let step = plan.step.clone();
    let table_rows = table.parts.iter().map(|p| p.rows).sum();
    let threads = table.row_len / 32;
    for part in &table.parts {
        let p = Params {
            rows: part.rows,
            cols: table.row_len,
            row_bytes: table.row_bytes,
            first_row: part.first_row,
            scale,
            past_table,
            table_rows,
        };
        plan.push(
            PipelineKey::new(Kernel::Embed, Some(table.ty)),
            &[&part.buffer, &step, out],
            super::params(&p),
            Groups::per_token(threads.div_ceil(64)),
        );
    }
    plan.weight_bytes += table.row_bytes as u64;
}

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
}

/// Adds `out[t] = table[token t] * scale` to the plan. out: (batch, table.row_len) f32.
pub fn push(plan: &mut Plan, table: &GpuTensor, out: &wgpu::Buffer, scale: f32) {
    let step = plan.step.clone();
    let threads = table.row_len / 32;
    for part in &table.parts {
        let p = Params {
            rows: part.rows,
            cols: table.row_len,
            row_bytes: table.row_bytes,
            first_row: part.first_row,
            scale,
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

//! A table's row added to each token's row of the residual (shaders/add_position.wgsl): BERT's learned
//! absolute positions, with its token-type row folded in at load, or a token-type row alone.

use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    by_position: u32,
}

/// Adds `x[t] += table[pos of token t]` (or `table[0]` where not `by_position`) for each token row of the run.
/// table: (rows, n) f32; x: (batch, n).
pub fn push(
    plan: &mut Plan,
    (table, by_position): (&wgpu::Buffer, bool),
    x: &wgpu::Buffer,
    n: u32,
) {
    let step = plan.step.clone();
    let p = Params {
        n,
        by_position: by_position as u32,
    };
    plan.push(
        PipelineKey::new(Kernel::AddPosition, None),
        &[table, x, &step],
        super::params(&p),
        Groups::per_token(n.div_ceil(64)),
    );
}

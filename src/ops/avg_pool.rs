//! A grid of token rows averaged in squares (shaders/avg_pool.wgsl): Gemma 3's vision projector pools
//! the encoder's grid of patches before projecting it.

use crate::gpu::{Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    side: u32,
    k: u32,
}

/// Adds `y = x`'s side x side grid of rows averaged in k x k squares, row-major both. x: (side^2, n)
/// f32; y: ((side / k)^2, n).
pub fn push(plan: &mut Plan, x: &wgpu::Buffer, y: &wgpu::Buffer, n: u32, (side, k): (u32, u32)) {
    assert!(k > 0 && side.is_multiple_of(k));
    let out = (side / k) * (side / k);
    plan.push(
        PipelineKey::new(Kernel::AvgPool, None),
        &[x, y],
        super::params(&Params { n, side, k }),
        [n.div_ceil(64), out, 1],
    );
}

/// CPU reference.
pub fn reference(x: &[f32], n: usize, side: usize, k: usize) -> Vec<f32> {
    let out = side / k;
    let mut y = vec![0f32; out * out * n];
    for (row, y_row) in y.chunks_mut(n).enumerate() {
        let (y0, x0) = ((row / out) * k, (row % out) * k);
        for (c, v) in y_row.iter_mut().enumerate() {
            let sum: f32 = (y0..y0 + k)
                .flat_map(|gy| (x0..x0 + k).map(move |gx| (gy * side + gx) * n + c))
                .map(|i| x[i])
                .sum();
            *v = sum / (k * k) as f32;
        }
    }
    y
}

//! A grid of token rows averaged in squares, then scaled per value (shaders/avg_pool.wgsl): Gemma 3's
//! and Gemma 4's vision projectors pool the encoder's grid of patches before projecting it.

use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    k: u32,
    mul: f32,
}

/// What each pooled value becomes: (mean * mul - sub) * scale, sub and scale (n) f32 each.
pub struct Affine<'a> {
    pub mul: f32,
    pub sub: &'a wgpu::Buffer,
    pub scale: &'a wgpu::Buffer,
}

/// Adds `y` = x's grid of rows averaged in k x k squares, row-major both, then `affine`. x: (cols *
/// rows, n) f32, the run's tokens; `grid`: { cols, rows } (u32), written before each run, a multiple
/// of k each; y: ((cols / k) * (rows / k), n).
pub fn push(
    plan: &mut Plan,
    (x, grid, k): (&wgpu::Buffer, &wgpu::Buffer, u32),
    affine: Affine,
    y: &wgpu::Buffer,
    n: u32,
) {
    assert!(k > 0);
    plan.push(
        PipelineKey::new(Kernel::AvgPool, None),
        &[x, y, grid, affine.sub, affine.scale],
        super::params(&Params {
            n,
            k,
            mul: affine.mul,
        }),
        // A pooled row for each k * k of the run's tokens.
        Groups::PerTokens {
            x: n.div_ceil(64),
            per: k * k,
            z: 1,
        },
    );
}

/// CPU reference, with mul 1, sub 0 and scale 1.
pub fn reference(x: &[f32], n: usize, (cols, rows): (usize, usize), k: usize) -> Vec<f32> {
    let out_cols = cols / k;
    let mut y = vec![0f32; out_cols * (rows / k) * n];
    for (row, y_row) in y.chunks_mut(n).enumerate() {
        let (y0, x0) = ((row / out_cols) * k, (row % out_cols) * k);
        for (c, v) in y_row.iter_mut().enumerate() {
            let sum: f32 = (y0..y0 + k)
                .flat_map(|gy| (x0..x0 + k).map(move |gx| (gy * cols + gx) * n + c))
                .map(|i| x[i])
                .sum();
            *v = sum / (k * k) as f32;
        }
    }
    y
}

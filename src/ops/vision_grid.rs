//! The kernels of a vision encoder that reads an image's patches by their place in its grid
//! (shaders/grid.wgsl: { cols, rows }, written before each image, whose size the encoder takes as it
//! comes): Gemma 4's learned positions for each axis, and its queries and keys rotated by column in
//! one half of each head and by row in the other. Clamping rows to bounds (its clipped linear
//! layers) is here too.

use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct PositionParams {
    n: u32,
    size: u32,
}

/// Adds `x[t] += table[col of t] + table[size + row of t]` for each token of the run, a patch of the
/// grid. table: (2 * size, n) f32: the column table, then the row table.
pub fn push_positions(
    plan: &mut Plan,
    (table, size): (&wgpu::Buffer, u32),
    grid: &wgpu::Buffer,
    x: &wgpu::Buffer,
    n: u32,
) {
    let step = plan.step.clone();
    plan.push(
        PipelineKey::new(Kernel::GridPositions, None),
        &[table, x, grid, &step],
        super::params(&PositionParams { n, size }),
        Groups::per_token(n.div_ceil(64)),
    );
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct HeadParams {
    n_head: u32,
    head_dim: u32,
    eps: f32,
    rotate: u32,
}

/// Heads of `head_dim` values, `n_head` to a token's row, as `push_head_norm_rope` treats them.
#[derive(Clone, Copy)]
pub struct Heads {
    pub n_head: u32,
    pub head_dim: u32,
    pub eps: f32,
}

/// Adds, for each head of each token's row of x (n_head * head_dim), in place: the head RMS-normed
/// times `gain` (head_dim), then, where `freqs` are given (head_dim / 4, a pair's angle a
/// position), its first half rotated NeoX-wise at the token's column and its second half at its
/// row. Without them the head is normed alone.
pub fn push_head_norm_rope(
    plan: &mut Plan,
    x: &wgpu::Buffer,
    heads: Heads,
    gain: &wgpu::Buffer,
    rotation: Option<(&wgpu::Buffer, &wgpu::Buffer)>,
) {
    assert!(heads.head_dim.is_multiple_of(4));
    let step = plan.step.clone();
    // Unrotated heads bind the gain in place of the frequencies and the grid; the kernel reads neither.
    let (freqs, grid) = rotation.unwrap_or((gain, gain));
    let p = HeadParams {
        n_head: heads.n_head,
        head_dim: heads.head_dim,
        eps: heads.eps,
        rotate: rotation.is_some() as u32,
    };
    plan.push(
        PipelineKey::new(Kernel::HeadNormRope2d, None),
        &[x, gain, freqs, grid, &step],
        super::params(&p),
        Groups::PerTokens {
            x: heads.n_head,
            per: 1,
            z: 1,
        },
    );
}

/// The frequencies `push_head_norm_rope` turns a head's pairs at: each half of a head_dim head is a
/// NeoX rotation of head_dim / 2 dimensions, pair i at theta^(-2i / (head_dim / 2)).
pub fn rope_freqs(head_dim: u32, theta: f32) -> Vec<f32> {
    let n_rot = head_dim / 2;
    (0..head_dim / 4)
        .map(|i| theta.powf(-2.0 * i as f32 / n_rot as f32))
        .collect()
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ClampParams {
    n: u32,
    lo: f32,
    hi: f32,
}

/// Adds `y = clamp(x, lo, hi)` for each token row of n values.
pub fn push_clamp(
    plan: &mut Plan,
    x: &wgpu::Buffer,
    (lo, hi): (f32, f32),
    y: &wgpu::Buffer,
    n: u32,
) {
    let step = plan.step.clone();
    plan.push(
        PipelineKey::new(Kernel::Clamp, None),
        &[x, y, &step],
        super::params(&ClampParams { n, lo, hi }),
        Groups::per_token(n.div_ceil(64)),
    );
}

/// CPU reference of `push_head_norm_rope` for one token's row at (col, row) of the grid.
pub fn head_norm_rope_reference(
    x: &mut [f32],
    heads: Heads,
    gain: &[f32],
    rotation: Option<(&[f32], (u32, u32))>,
) {
    let hd = heads.head_dim as usize;
    for head in x.chunks_mut(hd) {
        let ms = head.iter().map(|v| v * v).sum::<f32>() / hd as f32;
        let scale = 1.0 / (ms + heads.eps).sqrt();
        for (v, g) in head.iter_mut().zip(gain) {
            *v *= scale * g;
        }
        let Some((freqs, (col, row))) = rotation else {
            continue;
        };
        let quarter = hd / 4;
        for (half, pos) in [(0, col), (1, row)] {
            for (j, freq) in freqs.iter().enumerate() {
                let (a, b) = (half * hd / 2 + j, half * hd / 2 + j + quarter);
                let (s, c) = (pos as f32 * freq).sin_cos();
                let (xa, xb) = (head[a], head[b]);
                head[a] = xa * c - xb * s;
                head[b] = xa * s + xb * c;
            }
        }
    }
}

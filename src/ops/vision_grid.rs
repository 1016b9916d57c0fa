//! The kernels of a vision encoder that reads an image's patches by their place in its grid
//! (shaders/grid.wgsl: { cols, rows, merge }, written before each image, whose size the encoder takes as it
//! comes): Gemma 4's learned positions for each axis, and its queries and keys rotated by column in
//! one half of each head and by row in the other; Qwen-VL's learned positions resized to the grid,
//! and its queries and keys rotated by row and column across each head. Clamping rows to bounds
//! (Gemma 4's clipped linear layers) is here too.

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
struct ResizedParams {
    n: u32,
    side: u32,
}

/// Adds to each patch's row of x (n values) a learned table of positions, (side * side, n) row by
/// row, resized to the image's grid: bilinearly, the table's corners on the grid's corners (ggml's
/// bilinear interpolation with aligned corners, as llama.cpp resizes Qwen-VL's positions).
pub fn push_resized_positions(
    plan: &mut Plan,
    (table, side): (&wgpu::Buffer, u32),
    grid: &wgpu::Buffer,
    x: &wgpu::Buffer,
    n: u32,
) {
    let step = plan.step.clone();
    plan.push(
        PipelineKey::new(Kernel::ResizedPositions, None),
        &[table, x, grid, &step],
        super::params(&ResizedParams { n, side }),
        Groups::per_token(n.div_ceil(64)),
    );
}

/// CPU reference of `push_resized_positions`: the table's row for (col, row) of a grid of
/// (cols, rows), n values.
pub fn resized_position_reference(
    table: &[f32],
    (side, n): (usize, usize),
    (cols, rows): (usize, usize),
    (col, row): (usize, usize),
) -> Vec<f32> {
    let source = |i: usize, out: usize| {
        let scale = match out > 1 && side > 1 {
            true => (out - 1) as f64 / (side - 1) as f64,
            false => out as f64 / side as f64,
        };
        let at = i as f64 / scale;
        let lo = (at.floor() as usize).min(side - 1);
        (lo, (lo + 1).min(side - 1), (at - lo as f64).clamp(0.0, 1.0))
    };
    let (x0, x1, dx) = source(col, cols);
    let (y0, y1, dy) = source(row, rows);
    let at = |y: usize, x: usize, c: usize| table[(y * side + x) * n + c] as f64;
    (0..n)
        .map(|c| {
            let top = at(y0, x0, c) * (1.0 - dx) + at(y0, x1, c) * dx;
            let bottom = at(y1, x0, c) * (1.0 - dx) + at(y1, x1, c) * dx;
            (top * (1.0 - dy) + bottom * dy) as f32
        })
        .collect()
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct HeadParams {
    n_head: u32,
    head_dim: u32,
    eps: f32,
    norm: u32,
    rotate: u32,
}

/// Heads of `head_dim` values, `n_head` to a token's row, as `push_head_norm_rope` treats them.
#[derive(Clone, Copy)]
pub struct Heads {
    pub n_head: u32,
    pub head_dim: u32,
    pub eps: f32,
}

/// How a head turns by its token's place in the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// Gemma 4's: each half of the head a NeoX rotation of half a head, the first half at the
    /// token's column, the second at its row.
    Halves,
    /// Qwen-VL's (ggml's vision RoPE): pair p of the head's first half turns dimensions p and
    /// p + head_dim / 2, the first quarter of pairs at the token's row, the second at its column.
    Across,
}

impl Rotation {
    /// The dimensions pair p of a head turns, and whether it turns by the row (else the column).
    fn pair(self, p: usize, head_dim: usize) -> (usize, usize, bool) {
        let (half, quarter) = (head_dim / 2, head_dim / 4);
        match self {
            Rotation::Halves => {
                let a = (p / quarter) * half + p % quarter;
                (a, a + quarter, p >= quarter)
            }
            Rotation::Across => (p, p + half, p < quarter),
        }
    }
}

/// Adds, for each head of each token's row of x (n_head * head_dim), in place: the head RMS-normed
/// times `gain` (head_dim) where one is given, then where `rotation` is given, the head turned so
/// at the token's place in `grid` by `freqs` (head_dim / 4, a pair's angle a position).
pub fn push_head_norm_rope(
    plan: &mut Plan,
    x: &wgpu::Buffer,
    heads: Heads,
    gain: Option<&wgpu::Buffer>,
    rotation: Option<(Rotation, &wgpu::Buffer, &wgpu::Buffer)>,
) {
    assert!(heads.head_dim.is_multiple_of(4));
    let step = plan.step.clone();
    // What the kernel does not read is bound to a buffer it reads (x it writes, so not x).
    let (freqs, grid) = match (rotation, gain) {
        (Some((_, freqs, grid)), _) => (freqs, grid),
        (None, Some(gain)) => (gain, gain),
        (None, None) => panic!("a head neither normed nor rotated"),
    };
    let p = HeadParams {
        n_head: heads.n_head,
        head_dim: heads.head_dim,
        eps: heads.eps,
        norm: gain.is_some() as u32,
        rotate: match rotation {
            None => 0,
            Some((Rotation::Halves, ..)) => 1,
            Some((Rotation::Across, ..)) => 2,
        },
    };
    plan.push(
        PipelineKey::new(Kernel::HeadNormRope2d, None),
        &[x, gain.unwrap_or(freqs), freqs, grid, &step],
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
    gain: Option<&[f32]>,
    rotation: Option<(Rotation, &[f32], (u32, u32))>,
) {
    let hd = heads.head_dim as usize;
    for head in x.chunks_mut(hd) {
        if let Some(gain) = gain {
            let ms = head.iter().map(|v| v * v).sum::<f32>() / hd as f32;
            let scale = 1.0 / (ms + heads.eps).sqrt();
            for (v, g) in head.iter_mut().zip(gain) {
                *v *= scale * g;
            }
        }
        let Some((rotation, freqs, (col, row))) = rotation else {
            continue;
        };
        for p in 0..hd / 2 {
            let (a, b, by_row) = rotation.pair(p, hd);
            let pos = if by_row { row } else { col };
            let (s, c) = (pos as f32 * freqs[p % (hd / 4)]).sin_cos();
            let (xa, xb) = (head[a], head[b]);
            head[a] = xa * c - xb * s;
            head[b] = xa * s + xb * c;
        }
    }
}

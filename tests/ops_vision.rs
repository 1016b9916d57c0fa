//! The kernels of Gemma 4's and Qwen3.5's vision encoders against CPU references on seeded random
//! data: learned positions by column and row, and a learned square of them resized to the grid;
//! heads normed and rotated by column and row in either layout; the grid pooled and standardized,
//! rows clamped. The plan is made for a larger run than it records, as an encoder made for its
//! largest image runs a smaller one, and the grids are not square, so a column read as a row would
//! show; Qwen's patches come in 2 x 2 squares.

use crate::common;

use common::{f32_buffer, gpu, nmse, Rng};
use pollster::FutureExt as _;
use wick::gpu::{read_back_f32, scratch_buffer, Gpu, Plan, StepInput};
use wick::ops::avg_pool::{self, Affine};
use wick::ops::vision_grid::{self, Heads, Rotation};

/// 6 columns, 3 rows of patches; the plan holds 27.
const COLS: u32 = 6;
const ROWS: u32 = 3;
const BATCH: u32 = 27;

/// Finishes `plan` and runs it over the grid's patches.
fn run_grid(gpu: &Gpu, plan: Plan) {
    run_patches(gpu, plan, COLS * ROWS);
}

/// Finishes `plan` and runs it over `n` patches.
fn run_patches(gpu: &Gpu, mut plan: Plan, n: u32) {
    plan.finish(gpu).block_on().unwrap();
    let mut enc = gpu.device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        plan.record(&mut pass, n);
    }
    gpu.queue.submit([enc.finish()]);
}

fn read(gpu: &Gpu, buffer: &wgpu::Buffer, n: usize) -> Vec<f32> {
    read_back_f32(gpu, buffer, n).block_on().unwrap()
}

#[test]
fn grid_kernels_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(77);
    let n_patches = (COLS * ROWS) as usize;
    let step = StepInput::new(&gpu, BATCH);
    step.write(&gpu, 0, &vec![0; n_patches]);
    let grid = wick::gpu::storage_buffer(&gpu, "grid", bytemuck::cast_slice(&[COLS, ROWS, 1]));
    let plan = || Plan::new(&gpu, &step, BATCH);

    // Positions: a table of 8 positions an axis, rows of 40 values.
    let (n, size) = (40usize, 8u32);
    let table = rng.vec(2 * size as usize * n);
    let x = rng.vec(BATCH as usize * n);
    let xb = f32_buffer(&gpu, &x);
    let mut p = plan();
    vision_grid::push_positions(
        &mut p,
        (&f32_buffer(&gpu, &table), size),
        &grid,
        &xb,
        n as u32,
    );
    run_grid(&gpu, p);
    let mut want = x.clone();
    for t in 0..n_patches {
        let (col, row) = (t % COLS as usize, t / COLS as usize);
        for c in 0..n {
            want[t * n + c] += table[col * n + c] + table[(size as usize + row) * n + c];
        }
    }
    let got = read(&gpu, &xb, want.len());
    assert!(
        nmse(&got, &want) < 1e-12,
        "positions: nmse {}",
        nmse(&got, &want)
    );

    // Heads normed and rotated (queries, keys), and normed alone (values): 3 heads of 16.
    let heads = Heads {
        n_head: 3,
        head_dim: 16,
        eps: 1e-6,
    };
    let width = (heads.n_head * heads.head_dim) as usize;
    let gain: Vec<f32> = (0..16).map(|_| 1.0 + 0.5 * rng.f32()).collect();
    let freqs = vision_grid::rope_freqs(heads.head_dim, 100.0);
    assert_eq!(freqs.len(), 4);
    for rotate in [true, false] {
        let x: Vec<f32> = rng
            .vec(BATCH as usize * width)
            .iter()
            .map(|v| v * 3.0)
            .collect();
        let xb = f32_buffer(&gpu, &x);
        let (gb, fb) = (f32_buffer(&gpu, &gain), f32_buffer(&gpu, &freqs));
        let mut p = plan();
        let rotation = rotate.then_some((Rotation::Halves, &fb, &grid));
        vision_grid::push_head_norm_rope(&mut p, &xb, heads, Some(&gb), rotation);
        run_grid(&gpu, p);
        let mut want = x.clone();
        for (t, row) in want.chunks_mut(width).take(n_patches).enumerate() {
            let place = (t as u32 % COLS, t as u32 / COLS);
            let rotation = rotate.then_some((Rotation::Halves, &freqs[..], place));
            vision_grid::head_norm_rope_reference(row, heads, Some(&gain), rotation);
        }
        let got = read(&gpu, &xb, want.len());
        let e = nmse(&got, &want);
        assert!(e < 1e-11, "heads (rotated: {rotate}): nmse {e}");
    }
    // The rotation itself matters: a head rotated by its row where its column belongs differs.
    let mut row = vec![0.5f32; 16];
    let mut swapped = row.clone();
    let one = Heads { n_head: 1, ..heads };
    let at = |place| Some((Rotation::Halves, &freqs[..], place));
    vision_grid::head_norm_rope_reference(&mut row, one, Some(&gain), at((4, 1)));
    vision_grid::head_norm_rope_reference(&mut swapped, one, Some(&gain), at((1, 4)));
    assert!(nmse(&swapped, &row) > 1e-3);

    // Pooled in 3 x 3 squares (2 x 1 of them), scaled, standardized.
    let n = 36usize;
    let x = rng.vec(BATCH as usize * n);
    let (sub, scale) = (rng.vec(n), rng.vec(n));
    let pooled = scratch_buffer(&gpu, "pooled", 2 * n as u64 * 4)
        .block_on()
        .unwrap();
    let mut p = plan();
    let (sb, cb) = (f32_buffer(&gpu, &sub), f32_buffer(&gpu, &scale));
    let affine = Affine {
        mul: 6.0,
        sub: &sb,
        scale: &cb,
    };
    let xb = f32_buffer(&gpu, &x);
    avg_pool::push(&mut p, (&xb, &grid, 3), affine, &pooled, n as u32);
    run_grid(&gpu, p);
    let mean = avg_pool::reference(&x[..n_patches * n], n, (COLS as usize, ROWS as usize), 3);
    let want: Vec<f32> = (mean.iter().enumerate())
        .map(|(i, m)| (m * 6.0 - sub[i % n]) * scale[i % n])
        .collect();
    let got = read(&gpu, &pooled, want.len());
    assert!(
        nmse(&got, &want) < 1e-12,
        "pool: nmse {}",
        nmse(&got, &want)
    );

    // Clamped into another buffer; rows past the run's untouched.
    let n = 50usize;
    let x = rng.vec(BATCH as usize * n);
    let y = vec![9.0f32; BATCH as usize * n];
    let (xb, yb) = (f32_buffer(&gpu, &x), f32_buffer(&gpu, &y));
    let mut p = plan();
    vision_grid::push_clamp(&mut p, &xb, (-0.3, 0.5), &yb, n as u32);
    run_grid(&gpu, p);
    let want: Vec<f32> = (x.iter().enumerate())
        .map(|(i, v)| {
            if i < n_patches * n {
                v.clamp(-0.3, 0.5)
            } else {
                9.0
            }
        })
        .collect();
    assert_eq!(read(&gpu, &yb, want.len()), want);
}

/// Qwen-VL's grid: 6 x 4 patches in 2 x 2 squares, the squares row by row. Its learned square of
/// positions (5 a side: the grid's columns stretch it, its rows shrink it) resized to the grid, and
/// heads rotated across (unnormed), each against the CPU at the patch's place.
#[test]
fn squares_grid_kernels_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(91);
    let (cols, rows, merge) = (6usize, 4usize, 2usize);
    let n_patches = cols * rows;
    // Each patch's (column, row), squares row by row, each square's patches row by row.
    let mut places = Vec::new();
    for sy in (0..rows).step_by(merge) {
        for sx in (0..cols).step_by(merge) {
            for y in sy..sy + merge {
                for x in sx..sx + merge {
                    places.push((x, y));
                }
            }
        }
    }
    let step = StepInput::new(&gpu, BATCH);
    step.write(&gpu, 0, &vec![0; n_patches]);
    let words = [cols as u32, rows as u32, merge as u32];
    let grid = wick::gpu::storage_buffer(&gpu, "grid", bytemuck::cast_slice(&words));
    let plan = || Plan::new(&gpu, &step, BATCH);

    let (n, side) = (40usize, 5usize);
    let table = rng.vec(side * side * n);
    let x = rng.vec(BATCH as usize * n);
    let xb = f32_buffer(&gpu, &x);
    let mut p = plan();
    let tb = f32_buffer(&gpu, &table);
    vision_grid::push_resized_positions(&mut p, (&tb, side as u32), &grid, &xb, n as u32);
    run_patches(&gpu, p, n_patches as u32);
    let mut want = x.clone();
    for (t, &place) in places.iter().enumerate() {
        let resized =
            vision_grid::resized_position_reference(&table, (side, n), (cols, rows), place);
        for (w, r) in want[t * n..][..n].iter_mut().zip(resized) {
            *w += r;
        }
    }
    let got = read(&gpu, &xb, want.len());
    let e = nmse(&got, &want);
    assert!(e < 1e-12, "resized positions: nmse {e}");
    // The corners land on the table's corners.
    let corner = vision_grid::resized_position_reference(&table, (side, n), (cols, rows), (5, 3));
    let last = &table[(side * side - 1) * n..];
    assert!(corner.iter().zip(last).all(|(a, b)| (a - b).abs() < 1e-6));

    let heads = Heads {
        n_head: 2,
        head_dim: 16,
        eps: 1e-6,
    };
    let width = (heads.n_head * heads.head_dim) as usize;
    let freqs = vision_grid::rope_freqs(heads.head_dim, 10000.0);
    let x = rng.vec(BATCH as usize * width);
    let xb = f32_buffer(&gpu, &x);
    let fb = f32_buffer(&gpu, &freqs);
    let mut p = plan();
    let rotation = Some((Rotation::Across, &fb, &grid));
    vision_grid::push_head_norm_rope(&mut p, &xb, heads, None, rotation);
    run_patches(&gpu, p, n_patches as u32);
    let mut want = x.clone();
    for (row, &(col, r)) in want.chunks_mut(width).zip(&places) {
        let rotation = Some((Rotation::Across, &freqs[..], (col as u32, r as u32)));
        vision_grid::head_norm_rope_reference(row, heads, None, rotation);
    }
    let got = read(&gpu, &xb, want.len());
    let e = nmse(&got, &want);
    assert!(e < 1e-11, "heads rotated across: nmse {e}");
    // Across is not Halves: the layouts turn different dimensions.
    let mut across = x[..width].to_vec();
    let mut halves = across.clone();
    vision_grid::head_norm_rope_reference(
        &mut across,
        heads,
        None,
        Some((Rotation::Across, &freqs, (3, 1))),
    );
    vision_grid::head_norm_rope_reference(
        &mut halves,
        heads,
        None,
        Some((Rotation::Halves, &freqs, (3, 1))),
    );
    assert!(nmse(&across, &halves) > 1e-3);
}

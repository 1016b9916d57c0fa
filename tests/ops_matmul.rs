//! The products of a prompt's chunk against the CPU on seeded random data: the matmul tiles for every
//! type and every tile the tuner may pick, and the matrix cores' tiles where the adapter has them
//! (scripts/test-matrix-cores.sh runs these on a lavapipe that has them).

use crate::common;

use common::{f32_buffer, gpu, matrix_cores_only, nmse, packed, q8_rounded, run, Rng, Q8_NMSE};
use pollster::FutureExt as _;
use wick::gguf::GgmlType;
use wick::gpu::{
    read_back_f32, CoopTile, Gpu, GpuTensor, Kernel, MatrixCores, MatvecKernel, MatvecShape,
    PipelineKey, Rounding, Split, Store, Tuning, XNorm, STEP_TOKENS_MAX,
};
use wick::ops::matvec;

/// The products of a run (shaders/matmul.wgsl): 21 tokens in a plan for 40, so one 16-token tile is
/// full, one is partly used and one is skipped; 37 rows leave most of the 64-row tile empty. Then 131
/// tokens of 150 by 300 rows in one part: several tiles each way, the last of each partly used, in
/// every tile the tuner may pick (64 x 16; 128 x 32 and 128 x 64 where the adapter holds them; 64 x
/// 64 in registers, shaders/matmul_rows_tile.wgsl, whose last thread's rows run past the 37). A plan
/// for 8 tokens (a decode step of 8 sequences, `STEP_TOKENS_MAX`) runs 7 through the matvec kernel
/// four tokens at a time (shaders/matvec_pairs.wgsl), in two layers of workgroups, the second short
/// of a token, in every kernel shape the tuner may pick for it, the odd last row included: the
/// tiles among them, the 64-thread one's 16 tokens 9 short and the tile of a step's 8 tokens in
/// registers (`STEP_ROWS_TILE_TOKENS`) one short. A plan for 16 runs 11 as a prompt's chunk.
#[test]
fn matmul_every_type_against_cpu() {
    let Some(gpu) = gpu() else { return };
    match gpu.matrix_cores() {
        Some(cores) => eprintln!("matmul on matrix cores: checked ({cores:?})"),
        None => eprintln!(
            "matmul on matrix cores: skipped, {} has no cooperative matrices for it",
            gpu.describe()
        ),
    }
    // Tiles held in f16 and a step's products on 8-bit x, which GPUs are offered, among the
    // candidates here too.
    gpu.set_rounds(Rounding::F16Tiles, true);
    gpu.set_rounds(Rounding::Int8X, true);
    let mut rng = Rng(2024);
    for (batch, n_tokens, rows, part_rows) in [
        (40u32, 21usize, 37u32, 10u64),
        (150, 131, 300, 300),
        (8, 7, 37, 10),
        (16, 11, 37, 10),
    ] {
        assert_eq!(batch <= STEP_TOKENS_MAX, batch == 8, "one step among them");
        for ty in GgmlType::ALL {
            let cols = if ty.block_len() == 256 { 768 } else { 736 };
            let row_bytes = ty.bytes_for(cols as u64).unwrap();
            let (w, deq) = packed(&gpu, ty, rows, cols, row_bytes * part_rows + 64, &mut rng);
            let x = rng.vec(batch as usize * cols as usize);
            let y0 = rng.vec(batch as usize * rows as usize);
            let product = Product {
                w: &w,
                deq: &deq,
                x: &x,
                y0: &y0,
                batch,
                n_tokens,
            };
            for accumulate in [false, true] {
                product.check(&gpu, accumulate, "");
            }
            if batch > 16 {
                // Each tile the tuner may pick, where the adapter holds it.
                let shape = |rows| MatvecShape {
                    tokens: batch,
                    ..MatvecShape::of(Kernel::Matmul(Store::Rows, XNorm::None), ty, cols, rows)
                };
                product.check_each_candidate(&gpu, shape, true);
            }
            if batch <= STEP_TOKENS_MAX && !matrix_cores_only() {
                // W comes in parts of 10 rows (and 7): each part's shape takes the candidate.
                // Several tokens take four to a workgroup, with winners of their own.
                let pairs = Kernel::MatvecPairs(Store::Rows, XNorm::None);
                let shape = |rows| MatvecShape::of(pairs, ty, cols, rows).in_step(batch);
                product.check_each_candidate(&gpu, shape, false);
            }
        }
    }
}

/// A product of a random matrix and the x of a run's tokens, and its CPU reference.
struct Product<'a> {
    w: &'a GpuTensor,
    deq: &'a [f32],
    x: &'a [f32],
    y0: &'a [f32],
    batch: u32,
    n_tokens: usize,
}

impl Product<'_> {
    /// `check` in each kernel shape the tuner may give `shape` (of W's rows) where the adapter
    /// holds it, every part of W taking it.
    fn check_each_candidate(
        &self,
        gpu: &Gpu,
        shape: impl Fn(u32) -> MatvecShape,
        accumulate: bool,
    ) {
        let whole = shape(self.w.rows);
        let candidates = whole.candidates(gpu.offers()).into_iter();
        let on_cores = |k: &MatvecKernel| !matrix_cores_only() || k.cooperative.is_some();
        for candidate in candidates.filter(on_cores) {
            if !whole.fits(&candidate, &gpu.limits) {
                eprintln!("{}: {candidate} does not fit this adapter", self.w.ty);
                continue;
            }
            let mut tuning = Tuning::default();
            for part in &self.w.parts {
                tuning.matvec.insert(shape(part.rows).key(), candidate);
            }
            gpu.set_tuning(tuning);
            // The matrix cores' tile and the f16 tiles round x and the weights to f16: a relative
            // error of 2^-11 on each, where a wrong block or a lost step errs by percents. On 8-bit
            // x the CPU's product takes x so rounded.
            let name = candidate.to_string();
            if candidate.split == Split::PartsQ8 {
                self.check_on_q8(gpu, accumulate, &name);
            } else if candidate.rounds_to_f16() {
                self.check_within(gpu, accumulate, &name, 1e-5);
            } else {
                self.check_within(gpu, accumulate, &name, 1e-10);
            }
            self.assert_runs_in(gpu, candidate);
        }
        gpu.set_tuning(Tuning::default());
    }

    /// Asserts that the product's plan runs every part of W in `kernel`, as the tuning says.
    fn assert_runs_in(&self, gpu: &Gpu, kernel: MatvecKernel) {
        let step = wick::gpu::StepInput::new(gpu, self.batch);
        let mut plan = wick::gpu::Plan::new(gpu, &step, self.batch);
        let y = f32_buffer(gpu, self.y0);
        matvec::push(&mut plan, self.w, &f32_buffer(gpu, self.x), &y, false);
        plan.finish(gpu).block_on().unwrap();
        assert_eq!(plan.dispatches.len(), self.w.parts.len());
        for d in &plan.dispatches {
            let shape = d.matvec().expect("a tunable product");
            assert_eq!(
                d.key,
                PipelineKey::matvec(&shape, kernel),
                "{}",
                shape.key()
            );
        }
    }

    fn check(&self, gpu: &Gpu, accumulate: bool, shape: &str) {
        self.check_within(gpu, accumulate, shape, 1e-10);
    }

    fn check_within(&self, gpu: &Gpu, accumulate: bool, shape: &str, tolerance: f64) {
        self.check_against(gpu, accumulate, shape, tolerance, false)
    }

    /// `check` of a kernel on 8-bit x: against the CPU's product of each token's x `q8_rounded`,
    /// within `Q8_NMSE`.
    fn check_on_q8(&self, gpu: &Gpu, accumulate: bool, shape: &str) {
        self.check_against(gpu, accumulate, shape, Q8_NMSE, true)
    }

    fn check_against(&self, gpu: &Gpu, accumulate: bool, shape: &str, tolerance: f64, q8: bool) {
        let (rows, cols) = (self.w.rows as usize, self.w.row_len as usize);
        let (ty, n_tokens, batch) = (self.w.ty, self.n_tokens, self.batch);
        let xb = f32_buffer(gpu, self.x);
        let yb = f32_buffer(gpu, self.y0);
        let step = wick::gpu::StepInput::new(gpu, batch);
        step.write(gpu, 0, &vec![0; n_tokens]);
        let mut plan = wick::gpu::Plan::new(gpu, &step, batch);
        matvec::push(&mut plan, self.w, &xb, &yb, accumulate);
        run(gpu, plan);
        let got = read_back_f32(gpu, &yb, self.y0.len()).block_on().unwrap();
        let mut want = self.y0.to_vec();
        for t in 0..n_tokens {
            let x_t = &self.x[t * cols..(t + 1) * cols];
            let x_t = if q8 { q8_rounded(x_t) } else { x_t.to_vec() };
            matvec::reference(
                self.deq,
                &x_t,
                &mut want[t * rows..(t + 1) * rows],
                accumulate,
            );
        }
        let e = nmse(&got, &want);
        let what = format!("{ty} {n_tokens} of {batch} accumulate={accumulate} {shape}");
        assert!(e < tolerance, "{what}: nmse {e}");
        // Rows of tokens past the run are left as they were.
        assert_eq!(got[n_tokens * rows..], self.y0[n_tokens * rows..], "{what}");
    }
}

/// The matrix cores' tile in 16 x 16 products, which GPUs with matrix cores run (NVIDIA's, AMD's),
/// where the adapter is Mesa's lavapipe: it advertises 8 x 8 products only, and so gets the 8 x 8
/// tile from the tuner, but runs 16 x 16 too (scripts/test-matrix-cores.sh). Every type in two of
/// the tiles, a run of 131 tokens of 150 by 300 rows: partial tiles both ways (the tall one's steps
/// of two chunks: a row of 736 weights ends in half a step). The tall tile's 35 KiB of workgroup
/// memory, and the 44 KiB of the large tile with helpers loading a step ahead, are more than lavapipe
/// reports it has (so the tuner does not offer them there), and lavapipe runs them all the same:
/// the one place here that their sums are checked.
#[test]
fn matmul_on_16x16_matrix_cores_where_lavapipe_runs_them() {
    let Some(gpu) = gpu() else { return };
    let Some(cores) = gpu
        .matrix_cores()
        .filter(|_| gpu.info.name.contains("llvmpipe"))
    else {
        eprintln!("16 x 16 matrix cores: skipped, not lavapipe with cooperative matrices");
        return;
    };
    eprintln!("16 x 16 matrix cores: checked");
    let mut rng = Rng(1616);
    let (batch, n_tokens, rows) = (150u32, 131usize, 300u32);
    for (i, ty) in GgmlType::ALL.into_iter().enumerate() {
        let cols = if ty.block_len() == 256 { 768 } else { 736 };
        let data = ProductData::random(&gpu, ty, rows, cols, batch, &mut rng);
        let sixteen = MatrixCores { size: 16, ..cores };
        // Two tiles a type, in turn: each tile meets four types, blocks of 32 weights and of 256
        // among them. Each is a kernel of its own to build (seconds on lavapipe), and
        // `matmul_every_type_against_cpu` checked every type in the tiles that fit the adapter.
        let tiles =
            [i, i + CoopTile::ALL.len() / 2].map(|t| CoopTile::ALL[t % CoopTile::ALL.len()]);
        for tile in tiles {
            let kernel = data.on_matrix_cores(&gpu, sixteen, tile);
            data.product(n_tokens)
                .check_within(&gpu, true, &kernel.to_string(), 1e-5);
        }
    }
    gpu.set_tuning(Tuning::default());
}

/// A matrix of W's rows, x and y for `batch` tokens, on the GPU and as the CPU reads them.
struct ProductData {
    w: GpuTensor,
    deq: Vec<f32>,
    x: Vec<f32>,
    y0: Vec<f32>,
    batch: u32,
}

impl ProductData {
    fn random(gpu: &Gpu, ty: GgmlType, rows: u32, cols: u32, batch: u32, rng: &mut Rng) -> Self {
        let row_bytes = ty.bytes_for(cols as u64).unwrap();
        let (w, deq) = packed(gpu, ty, rows, cols, row_bytes * rows as u64 + 64, rng);
        let x = rng.vec(batch as usize * cols as usize);
        let y0 = rng.vec(batch as usize * rows as usize);
        ProductData {
            w,
            deq,
            x,
            y0,
            batch,
        }
    }

    fn product(&self, n_tokens: usize) -> Product<'_> {
        Product {
            w: &self.w,
            deq: &self.deq,
            x: &self.x,
            y0: &self.y0,
            batch: self.batch,
            n_tokens,
        }
    }

    /// Makes the GPU's tuning put the product, as a prompt's chunk, on `cores` in `tile`; returns
    /// that kernel.
    fn on_matrix_cores(&self, gpu: &Gpu, cores: MatrixCores, tile: CoopTile) -> MatvecKernel {
        self.tuned_to(gpu, MatvecKernel::on_matrix_cores(cores, tile))
    }

    /// Makes the GPU's tuning give the product, as a prompt's chunk, `kernel`; returns it.
    fn tuned_to(&self, gpu: &Gpu, kernel: MatvecKernel) -> MatvecKernel {
        let (ty, cols, rows) = (self.w.ty, self.w.row_len, self.w.rows);
        let shape = MatvecShape {
            tokens: self.batch,
            ..MatvecShape::of(Kernel::Matmul(Store::Rows, XNorm::None), ty, cols, rows)
        };
        let mut tuning = Tuning::default();
        tuning.matvec.insert(shape.key(), kernel);
        gpu.set_tuning(tuning);
        kernel
    }
}

/// Where plans may not use the matrix cores (`Gpu::set_rounds(Rounding::MatrixCores, false)`:
/// perplexity's default), a winner on them is passed over and the product stays f32: within the f32
/// tiles' tolerance, which the f16 inputs of the matrix cores' tile are far outside of.
#[test]
fn matrix_cores_switched_off_keep_products_f32() {
    let Some(gpu) = gpu() else { return };
    let Some(cores) = gpu.matrix_cores() else {
        eprintln!(
            "matrix cores switched off: skipped, {} has none",
            gpu.describe()
        );
        return;
    };
    let switch = |on| gpu.set_rounds(Rounding::MatrixCores, on);
    let on_cores = |data: &ProductData| data.on_matrix_cores(&gpu, cores, CoopTile::Square);
    switched_off_keeps_products_f32(&gpu, on_cores, switch);
}

/// As the matrix cores, tiles held in f16 (`Gpu::set_rounds(Rounding::F16Tiles, false)`:
/// perplexity's).
#[test]
fn f16_tiles_switched_off_keep_products_f32() {
    let Some(gpu) = gpu() else { return };
    let in_f16 = |data: &ProductData| data.tuned_to(&gpu, MatvecKernel::f16_tile(64));
    switched_off_keeps_products_f32(&gpu, in_f16, |on| gpu.set_rounds(Rounding::F16Tiles, on));
}

/// A product tuned by `tune` to a kernel that rounds to f16, checked within f32's tolerance with
/// `switch(false)`, and found outside of it with `switch(true)`: the winner was passed over, and
/// then ran.
fn switched_off_keeps_products_f32(
    gpu: &Gpu,
    tune: impl Fn(&ProductData) -> MatvecKernel,
    switch: impl Fn(bool),
) {
    let mut rng = Rng(3131);
    let data = ProductData::random(gpu, GgmlType::Q8_0, 70, 512, 40, &mut rng);
    let product = data.product(37);
    let kernel = tune(&data);
    switch(false);
    product.check_within(gpu, false, &format!("{kernel} switched off"), 1e-10);
    switch(true);
    let on = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        product.check_within(gpu, false, &format!("{kernel} on"), 1e-10)
    }));
    gpu.set_tuning(Tuning::default());
    assert!(on.is_err(), "{kernel} within f32's tolerance: did it run?");
}

/// The check before the tuner offers the matrix cores (`matvec::matrix_cores_work`: the kernel built
/// and run on exact numbers) passes where they work, as the tests above find they do.
#[test]
fn matrix_cores_check_passes_where_there_are_some() {
    let Some(gpu) = gpu() else { return };
    let works = matvec::matrix_cores_work(&gpu).block_on().unwrap();
    assert_eq!(works, gpu.matrix_cores().is_some(), "{}", gpu.describe());
}

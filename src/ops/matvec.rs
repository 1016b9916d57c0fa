//! y = W x on packed weights for each token of a run: shaders/matvec.wgsl for one token (decode), the
//! tiled shaders/matmul.wgsl for a prompt's chunk, which dequantizes each weight once for 16 tokens.
//! `push_pairs` is the way in for the fused projections: their kernels compute W's rows two at a time
//! and hand each pair to a store (shaders/store_*.wgsl) that finishes the next step's work.

use super::rms_norm::RmsNorm;
use crate::gguf::GgmlType;
use crate::gpu::{
    read_back_f32, scratch_buffer, storage_buffer, Activation, Gpu, GpuTensor, Kernel,
    MatvecKernel, MatvecShape, Offers, Plan, Shape, Stacked, StepInput, Store, TensorPart, Tuning,
    XNorm,
};

/// What a product reads: each token's row of x as it is, or as RMSNorm makes it (which the pair
/// kernels may do on the way in, `for_pairs`).
#[derive(Clone, Copy)]
pub enum Input<'a> {
    Rows(&'a wgpu::Buffer),
    RmsNorm(RmsNorm<'a>),
}

impl<'a> From<&'a wgpu::Buffer> for Input<'a> {
    fn from(rows: &'a wgpu::Buffer) -> Input<'a> {
        Input::Rows(rows)
    }
}

impl<'a> Input<'a> {
    /// The rows, normed into the norm's output rows first where this is a norm.
    pub fn rows(self, plan: &mut Plan) -> &'a wgpu::Buffer {
        match self {
            Input::Rows(x) => x,
            Input::RmsNorm(norm) => norm.push(plan),
        }
    }

    /// As the pair kernels (`push_pairs`) take it: a norm stays theirs to do where the plan fuses
    /// norms and its runs go through the matvec kernel; otherwise the rows (`rows`). Call once
    /// for all the products that read it.
    pub fn for_pairs(self, plan: &mut Plan) -> Input<'a> {
        match self {
            Input::RmsNorm(_) if plan.fuses_norms && plan.few_tokens() => self,
            _ => Input::Rows(self.rows(plan)),
        }
    }

    /// As a kernel that may norm x on the way in binds it, for products by `w` (`for_pairs`): the
    /// rows it reads (the norm's input where the norm is its to do), how it reads them, and the
    /// norm's gain, which binds last (`gpu::NORM_GAIN_BINDING`).
    pub(super) fn bound(
        self,
        plan: &mut Plan,
        w: &GpuTensor,
    ) -> (&'a wgpu::Buffer, XNorm, Option<&'a wgpu::Buffer>) {
        match self.for_pairs(plan) {
            Input::Rows(x) => (x, XNorm::None, None),
            Input::RmsNorm(n) => {
                assert_eq!(n.n, w.row_len, "{}: a norm of another width", w.name);
                (n.x, XNorm::Rms(n.eps.to_bits()), Some(n.gain))
            }
        }
    }
}

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
    bias_at: u32,
}

/// `Params::bias_at` of a matrix without a bias (shaders/matvec.wgsl's NO_BIAS).
const NO_BIAS: u32 = u32::MAX;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct RowsParams {
    rows: u32,
    cols: u32,
    row_bytes: u32,
    out_offset: u32,
    accumulate: u32,
    out_stride: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ApartParams {
    rows: u32,
    cols: u32,
    row_bytes: u32,
    out_offset: u32,
    split: u32,
    total: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct GluWithParams {
    rows: u32,
    cols: u32,
    row_bytes: u32,
    out_offset: u32,
    out_stride: u32,
    u_offset: u32,
    u_stride: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct GroupedParams {
    rows: u32,
    cols: u32,
    row_bytes: u32,
    first_row: u32,
    part_rows: u32,
    group_stride: u32,
    x_stride: u32,
    y_stride: u32,
}

/// Adds `y = W x` (or `y += W x` when `accumulate`) for each token row of the run, one dispatch per
/// part of W. x: (batch, W.row_len) f32 (rows, or rows a norm makes: `Input`), y: (batch, W.rows) f32.
/// One token's product goes through shaders/matvec.wgsl, or where x's norm is the kernel's to do
/// (`Input::for_pairs`) through the pair kernel, which norms x on the way in.
pub fn push<'a>(
    plan: &mut Plan,
    w: &GpuTensor,
    x: impl Into<Input<'a>>,
    y: &wgpu::Buffer,
    accumulate: bool,
) {
    push_at(plan, w, x.into(), (y, 0, w.rows), accumulate);
}

/// As `push`, with `bias` (w.rows) added to each token's row: inside the product for one token, in
/// a dispatch of its own (ops::bias) for a run of several, which pays it once for all of them.
pub fn push_biased<'a>(
    plan: &mut Plan,
    w: &GpuTensor,
    x: impl Into<Input<'a>>,
    (y, accumulate): (&wgpu::Buffer, bool),
    bias: &wgpu::Buffer,
) {
    match (plan.batch, x.into().for_pairs(plan)) {
        (1, Input::Rows(x)) => push_one(plan, (w, Some(bias)), x, (y, 0), accumulate, w.rows, 0),
        (_, x) => {
            push_at(plan, w, x, (y, 0, w.rows), accumulate);
            super::bias::push(plan, bias, super::bias::Rows::One, y, w.rows);
        }
    }
}

/// As `push` for matrices that read the same x: y: (batch, ws.rows), each matrix's rows where the
/// stack puts them. A norm of x is done once for all of them, or in each one's kernel where the plan
/// folds norms into products.
pub fn push_stacked<'a>(plan: &mut Plan, ws: &Stacked, x: impl Into<Input<'a>>, y: &wgpu::Buffer) {
    let x = x.into().for_pairs(plan);
    for (w, offset) in &ws.tensors {
        push_at(plan, w, x, (y, *offset, ws.rows), false);
    }
}

/// As `push_stacked` for a stack whose first `split` rows (one matrix's) the kernels after it read
/// apart from the rest (another's): those go to `y0`, (batch, split), the others to `y1`, (batch,
/// ws.rows - split). A tensor of the stack that holds rows of both (two matrices of one type) takes
/// one dispatch, its pairs stored apart (shaders/store_apart.wgsl); one on either side, a product
/// of its own.
pub fn push_apart(
    plan: &mut Plan,
    ws: &Stacked,
    x: Input,
    [y0, y1]: [&wgpu::Buffer; 2],
    split: u32,
) {
    assert!(
        split.is_multiple_of(2),
        "a stack split inside a pair of rows"
    );
    let x = x.for_pairs(plan);
    for (w, offset) in &ws.tensors {
        let (first, end) = (*offset, offset + w.rows);
        if end <= split {
            push_at(plan, w, x, (y0, first, split), false);
        } else if first >= split {
            push_at(plan, w, x, (y1, first - split, ws.rows - split), false);
        } else {
            let params = |part: &TensorPart| {
                let p = ApartParams {
                    rows: part.rows,
                    cols: w.row_len,
                    row_bytes: w.row_bytes,
                    out_offset: first + part.first_row,
                    split,
                    total: ws.rows,
                };
                super::params(&p).to_vec()
            };
            push_pairs(plan, w, x, Store::Apart, &[y0, y1], params);
        }
    }
}

/// y = act(W x) * u, row by row, in the product's kernel (shaders/store_glu_with.wgsl): y (batch,
/// w.rows); u's rows of each token from index `u_offset` of rows of `u_stride` values.
pub fn push_glu_with(
    plan: &mut Plan,
    w: &GpuTensor,
    x: Input,
    act: Activation,
    (u, u_offset, u_stride): (&wgpu::Buffer, u32, u32),
    y: &wgpu::Buffer,
) {
    let params = |part: &TensorPart| {
        let p = GluWithParams {
            rows: part.rows,
            cols: w.row_len,
            row_bytes: w.row_bytes,
            out_offset: part.first_row,
            out_stride: w.rows,
            u_offset,
            u_stride,
        };
        super::params(&p).to_vec()
    };
    push_pairs(plan, w, x, Store::GluWith(act), &[y, u], params);
}

/// As `push`, with W's rows written from index `offset` of y's rows of `stride` values.
fn push_at(
    plan: &mut Plan,
    w: &GpuTensor,
    x: Input,
    (y, offset, stride): (&wgpu::Buffer, u32, u32),
    accumulate: bool,
) {
    let x = x.for_pairs(plan);
    if let (1, Input::Rows(x)) = (plan.batch, x) {
        push_one(plan, (w, None), x, (y, offset), accumulate, w.rows, 0);
        return;
    }
    let params = |part: &TensorPart| {
        let p = RowsParams {
            rows: part.rows,
            cols: w.row_len,
            row_bytes: w.row_bytes,
            out_offset: offset + part.first_row,
            accumulate: accumulate as u32,
            out_stride: stride,
        };
        super::params(&p).to_vec()
    };
    push_pairs(plan, w, x, Store::Rows, &[y], params);
}

/// Adds W x for each token of the run, computed two rows at a time, each pair handed to `store`:
/// shaders/matvec_pairs.wgsl in a run of a step's few tokens (`Plan::few_tokens`), the tiled matmul
/// in one of more.
/// `outputs` bind after W, x and the step input, and `params` gives each part of W its store's
/// parameters (which hold the part's rows, cols and row_bytes). A store other than `Rows` needs every part to hold whole pairs.
/// x's norm, where it has one, is done as `Input::for_pairs` says.
pub fn push_pairs(
    plan: &mut Plan,
    w: &GpuTensor,
    x: Input,
    store: Store,
    outputs: &[&wgpu::Buffer],
    params: impl Fn(&TensorPart) -> Vec<u8>,
) {
    let step = plan.step.clone();
    let (x, norm, gain) = x.bound(plan, w);
    for part in &w.parts {
        assert!(
            store == Store::Rows || (part.first_row % 2 == 0 && part.rows % 2 == 0),
            "{}: a part splits a pair of rows",
            w.name
        );
        let mut buffers = vec![&part.buffer, x, &step];
        buffers.extend_from_slice(outputs);
        // The norm's gain binds last (`gpu::NORM_GAIN_BINDING`).
        buffers.extend(gain);
        let params = params(part);
        if plan.few_tokens() {
            let kernel = Kernel::MatvecPairs(store, norm);
            let shape = MatvecShape::of(kernel, w.ty, w.row_len, part.rows);
            plan.push_matvec(shape, &buffers, &params);
        } else {
            // The tile is tuned per shape and chunk size (`matmul_tile`).
            let kernel = Kernel::Matmul(store, norm);
            let shape = MatvecShape::chunk(kernel, w.ty, (w.row_len, part.rows), 1, plan.batch);
            plan.push_matvec(shape, &buffers, &params);
        }
    }
    plan.weight_bytes += w.bytes();
}

/// As `push`, with W's rows in groups of `group_rows` that each read their own x: group g reads x
/// from float g * `group_stride` (a multiple of 4) of the token's row. Per-head matrices stacked in one
/// tensor work so. x: (batch, groups * group_stride), y: (batch, W.rows). One token goes through the
/// matvec kernel, more through shaders/matmul_grouped.wgsl, tiled as the matmul.
pub fn push_grouped(
    plan: &mut Plan,
    w: &GpuTensor,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
    accumulate: bool,
    group_rows: u32,
    group_stride: u32,
) {
    if plan.batch == 1 {
        push_one(
            plan,
            (w, None),
            x,
            (y, 0),
            accumulate,
            group_rows,
            group_stride,
        );
        return;
    }
    assert!(!accumulate, "the grouped matmul writes y");
    assert!(group_stride.is_multiple_of(4) && w.rows.is_multiple_of(group_rows));
    let groups = w.rows / group_rows;
    // The tile is tuned per shape and chunk size, as the plain product's is.
    let kernel = Kernel::MatmulGrouped;
    let shape = MatvecShape::chunk(kernel, w.ty, (w.row_len, group_rows), groups, plan.batch);
    let step = plan.step.clone();
    for part in &w.parts {
        let p = GroupedParams {
            rows: group_rows,
            cols: w.row_len,
            row_bytes: w.row_bytes,
            first_row: part.first_row,
            part_rows: part.rows,
            group_stride: group_stride / 4,
            x_stride: groups * group_stride / 4,
            y_stride: w.rows,
        };
        plan.push_matvec(shape, &[&part.buffer, x, &step, y], super::params(&p));
    }
    plan.weight_bytes += w.bytes();
}

/// The matvec kernel's dispatches; W's rows (each plus its bias, where `bias` is given) land in y from
/// index `offset`.
fn push_one(
    plan: &mut Plan,
    (w, bias): (&GpuTensor, Option<&wgpu::Buffer>),
    x: &wgpu::Buffer,
    (y, offset): (&wgpu::Buffer, u32),
    accumulate: bool,
    group_rows: u32,
    group_stride: u32,
) {
    assert!(group_stride.is_multiple_of(4) && group_rows > 0);
    assert_eq!(plan.batch, 1, "the matvec kernel runs one token");
    // Rows that read x in groups are shapes of their own (no split on 8-bit x takes them: it
    // quantizes one x for all of a workgroup's rows).
    let groups = match group_stride {
        0 => 1,
        _ => w.rows.div_ceil(group_rows),
    };
    for part in &w.parts {
        // Each part is its own shape: the tuned kernel shape for its rows.
        let shape = MatvecShape {
            matrices: groups,
            ..MatvecShape::of(Kernel::Matvec, w.ty, w.row_len, part.rows)
        };
        let p = Params {
            rows: part.rows,
            cols: w.row_len,
            row_bytes: w.row_bytes,
            out_offset: offset + part.first_row,
            accumulate: accumulate as u32,
            group_rows,
            group_stride: group_stride / 4,
            bias_at: bias.map_or(NO_BIAS, |_| part.first_row),
        };
        let b = bias.unwrap_or(x); // bound read-only, as x is: y is written
        plan.push_matvec(shape, &[&part.buffer, x, y, b], super::params(&p));
    }
    plan.weight_bytes += w.bytes();
}

/// Whether the subgroup sums (shaders/row_sum_subgroup.wgsl) give the right numbers on this device at
/// every shape tuning may give them. They take a row's threads to be neighbouring lanes of one
/// subgroup, as 1-D workgroups are laid out in practice but no specification promises, so tuning
/// offers them only where this says so. An F32 matrix of small whole numbers, whose sums are exact
/// in any order, against the CPU.
pub async fn subgroup_sums_work(gpu: &Gpu) -> Result<bool, crate::Error> {
    let (rows, cols) = (64u32, 2048u32); // rows long enough for every threads-per-row candidate
    let (w, x, y, want) = exact_product(gpu, "subgroup check", rows, cols, 1).await?;
    let step = StepInput::with(gpu, 0, &[0]);
    let mut plan = Plan::new(gpu, &step, 1);
    push(&mut plan, &w, &x, &y, false);
    plan.finish(gpu).await?;
    let matvec = plan.dispatches[0].matvec().expect("a matvec");
    let offers = Offers {
        subgroup_size: gpu.subgroup_size,
        cpu_forms: gpu.offers().cpu_forms,
        ..Offers::default()
    };
    for kernel in matvec.candidates(offers) {
        if !kernel.subgroup_sum {
            continue;
        }
        let mut tuning = Tuning::default();
        tuning.matvec.insert(matvec.key(), kernel);
        // A device may refuse to build them (a page that says its device has subgroups when it
        // was not granted them; a driver that cannot compile them): then they do not work either.
        let built = plan.run_checked(gpu, &tuning, "the subgroup check").await;
        if built.is_err() || read_back_f32(gpu, &y, rows as usize).await? != want {
            return Ok(false);
        }
    }
    Ok(true)
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

/// Whether the product on the matrix cores (shaders/matmul_coop.wgsl) builds on this device and gives
/// the right numbers: a driver's first use of cooperative matrices is where a compiler may fail or
/// err, so tuning offers them only where this says so, in every tile it would offer. Small whole
/// numbers, exact in f16 and their sums exact in f32 in any order, through a chunk of 70 tokens (a
/// tile and part of one) by 96 rows (one and a half of the square tile, part of the tall one), 9
/// 32-weight chunks a row (the tall tile's last step half empty), against the CPU.
pub async fn matrix_cores_work(gpu: &Gpu) -> Result<bool, crate::Error> {
    let Some(cores) = gpu.matrix_cores() else {
        return Ok(false);
    };
    let (rows, cols, tokens) = (96u32, 288u32, 70u32);
    let (w, x, y, want) = exact_product(gpu, "matrix-core check", rows, cols, tokens).await?;
    let step = StepInput::with(gpu, 0, &vec![0; tokens as usize]);
    let mut plan = Plan::new(gpu, &step, tokens);
    push(&mut plan, &w, &x, &y, false);
    plan.finish(gpu).await?;
    let matmul = plan.dispatches[0].matvec().expect("a matmul");
    let offers = Offers {
        matrix_cores: Some(cores),
        ..Offers::default()
    };
    let on_cores = matmul.candidates(offers).into_iter();
    // The tiles that do not fit the adapter are never offered.
    let offered = |k: &MatvecKernel| k.cooperative.is_some() && matmul.fits(k, &gpu.limits);
    for kernel in on_cores.filter(offered) {
        let mut tuning = Tuning::default();
        tuning.matvec.insert(matmul.key(), kernel);
        let built = plan
            .run_checked(gpu, &tuning, "the matrix-core check")
            .await;
        if built.is_err() || read_back_f32(gpu, &y, want.len()).await? != want {
            return Ok(false);
        }
    }
    Ok(true)
}

/// An F32 matrix of small whole numbers and `tokens` rows of x of them on the GPU, a buffer for the
/// products, and the products the CPU makes: exact in f16 and in any order of f32 sums, for the
/// checks of kernels that tuning offers only where they give the right numbers.
async fn exact_product(
    gpu: &Gpu,
    name: &str,
    rows: u32,
    cols: u32,
    tokens: u32,
) -> Result<(GpuTensor, wgpu::Buffer, wgpu::Buffer, Vec<f32>), crate::Error> {
    let small =
        |i: u32, m: u32| ((i.wrapping_mul(2_654_435_761) >> 16) % m) as f32 - (m / 2) as f32;
    let w: Vec<f32> = (0..rows * cols).map(|i| small(i, 9)).collect();
    let x: Vec<f32> = (0..tokens * cols).map(|i| small(i + 7, 5)).collect();
    let mut want = vec![0f32; (tokens * rows) as usize];
    let (x_rows, want_rows) = (x.chunks(cols as usize), want.chunks_mut(rows as usize));
    for (x_t, want_t) in x_rows.zip(want_rows) {
        reference(&w, x_t, want_t, false);
    }
    let shape = Shape {
        name: name.into(),
        ty: GgmlType::F32,
        row_len: cols as u64,
        rows: rows as u64,
        group_rows: 1,
    };
    let w = GpuTensor::from_host(gpu, &shape, bytemuck::cast_slice(&w)).await?;
    let x = storage_buffer(gpu, &format!("{name} x"), bytemuck::cast_slice(&x));
    let y = scratch_buffer(gpu, &format!("{name} y"), want.len() as u64 * 4).await?;
    Ok((w, x, y, want))
}

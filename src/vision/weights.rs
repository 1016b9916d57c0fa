//! Weights of a projector file remade as the kernels read them: matrices padded with zero columns
//! (and zero rows) to the kernels' multiples of 32, matrices the file stores transposed, split or
//! summed; and the biases and norms beside them.

use crate::gguf::GgmlType;
use crate::gpu::{GpuTensor, Shape};
use crate::models::Loader;
use crate::Error;

/// The tensor `name` of file shape `dims` as a matrix: its last dimension the rows, the others one
/// row's weights as the file lays them. Packed as in the file where it is already `rows_to` rows of
/// `cols_to`; otherwise each row padded with zero weights to `cols_to` and zero rows added up to
/// `rows_to`, in F16 where the file's are, F32 otherwise.
pub async fn padded(
    l: &mut Loader<'_>,
    name: &str,
    dims: &[u32],
    cols_to: u32,
    rows_to: u32,
) -> Result<GpuTensor, Error> {
    let cols: u32 = dims[..dims.len() - 1].iter().product();
    let rows = dims[dims.len() - 1];
    let info = l
        .header
        .tensor(name)
        .ok_or_else(|| Error::Model(format!("tensor {name} is missing")))?;
    if dims.len() == 2 && (cols, rows) == (cols_to, rows_to) {
        return l.matrix(name, cols, rows).await;
    }
    let pad = move |w: Vec<f32>| {
        let mut out = vec![0f32; cols_to as usize * rows_to as usize];
        for (r, row) in w.chunks(cols as usize).enumerate() {
            out[r * cols_to as usize..][..cols as usize].copy_from_slice(row);
        }
        out
    };
    let half = info.ty == GgmlType::F16;
    remade(l, (name, dims), (cols_to, rows_to), half, pad).await
}

/// The tensor `name`, (rows, cols) in the file (each of its `cols` rows is `rows` long: the product
/// reads it as x W), as a matrix of `rows` rows of `cols` weights.
pub async fn transposed(
    l: &mut Loader<'_>,
    name: &str,
    cols: u32,
    rows: u32,
) -> Result<GpuTensor, Error> {
    let half = l.header.tensor(name).is_some_and(|t| t.ty == GgmlType::F16);
    let transpose = move |w: Vec<f32>| {
        let (cols, rows) = (cols as usize, rows as usize);
        (0..rows * cols)
            .map(|i| w[(i % cols) * rows + i / cols])
            .collect()
    };
    remade(l, (name, &[rows, cols]), (cols, rows), half, transpose).await
}

/// The file's tensor `name` of shape `dims`, read as f32 at fill time and made by `make` into a
/// matrix of `rows` rows of `cols` weights: F16 where `half` (the file's are), F32 otherwise.
async fn remade(
    l: &mut Loader<'_>,
    (name, dims): (&str, &[u32]),
    (cols, rows): (u32, u32),
    half: bool,
    make: impl FnOnce(Vec<f32>) -> Vec<f32> + 'static,
) -> Result<GpuTensor, Error> {
    let shape = Shape {
        name: name.to_string(),
        ty: if half { GgmlType::F16 } else { GgmlType::F32 },
        row_len: cols as u64,
        rows: rows as u64,
        group_rows: 1,
    };
    let make = move |mut read: Vec<Vec<f32>>| as_bytes(&make(read.remove(0)), half);
    let mut made = l.derived(&[shape], &[(name, dims)], make).await?;
    Ok(made.remove(0))
}

fn as_bytes(values: &[f32], half: bool) -> Vec<u8> {
    match half {
        true => {
            let h: Vec<half::f16> = values.iter().map(|&v| half::f16::from_f32(v)).collect();
            bytemuck::cast_slice(&h).to_vec()
        }
        false => bytemuck::cast_slice(values).to_vec(),
    }
}

/// A LayerNorm's gain and bias, `name`.weight and `name`.bias.
pub async fn layer_norm_weights(
    l: &mut Loader<'_>,
    name: &str,
    n: u32,
) -> Result<(wgpu::Buffer, wgpu::Buffer), Error> {
    let w = l.vector(&format!("{name}.weight"), n).await?;
    Ok((w, l.vector(&format!("{name}.bias"), n).await?))
}

/// A matrix and its bias `name`.weight and `name`.bias: (cols, rows) in the file, padded with zeros
/// to (cols_to, rows_to).
pub async fn biased(
    l: &mut Loader<'_>,
    name: &str,
    (cols, rows): (u32, u32),
    (cols_to, rows_to): (u32, u32),
) -> Result<(GpuTensor, wgpu::Buffer), Error> {
    let w = padded(
        l,
        &format!("{name}.weight"),
        &[cols, rows],
        cols_to,
        rows_to,
    )
    .await?;
    let bias_name = format!("{name}.bias");
    let b = match rows_to == rows {
        true => l.vector(&bias_name, rows).await?,
        false => {
            let shape: &[u32] = &[rows];
            let pad = move |mut read: Vec<Vec<f32>>| {
                let mut b = read.remove(0);
                b.resize(rows_to as usize, 0.0);
                b
            };
            l.floats(&bias_name, &[(&bias_name, shape)], rows_to as usize, pad)
                .await?
        }
    };
    Ok((w, b))
}

/// The (cols, parts * rows) matrix `name`.weight and its bias `name`.bias cut into `parts` matrices
/// of `rows` rows and their biases, in order (a fused q, k and v).
pub async fn split_biased(
    l: &mut Loader<'_>,
    name: &str,
    (cols, rows): (u32, u32),
    parts: u32,
) -> Result<Vec<(GpuTensor, wgpu::Buffer)>, Error> {
    let (weight, bias) = (format!("{name}.weight"), format!("{name}.bias"));
    let info = (l.header.tensor(&weight))
        .ok_or_else(|| Error::Model(format!("tensor {weight} is missing")))?;
    let half = info.ty == GgmlType::F16;
    let shapes: Vec<Shape> = (0..parts)
        .map(|i| Shape {
            name: format!("{weight} ({i})"),
            ty: if half { GgmlType::F16 } else { GgmlType::F32 },
            row_len: cols as u64,
            rows: rows as u64,
            group_rows: 1,
        })
        .collect();
    let dims: &[u32] = &[cols, parts * rows];
    // The parts are the file's rows in order: the matrix as it is.
    let whole = move |mut read: Vec<Vec<f32>>| as_bytes(&read.remove(0), half);
    let matrices = l.derived(&shapes, &[(&weight, dims)], whole).await?;
    let mut out = Vec::new();
    for (i, m) in matrices.into_iter().enumerate() {
        let part = move |mut read: Vec<Vec<f32>>| {
            read.remove(0)[i * rows as usize..][..rows as usize].to_vec()
        };
        let shape: &[u32] = &[parts * rows];
        let b = (l.floats(&bias, &[(&bias, shape)], rows as usize, part)).await?;
        out.push((m, b));
    }
    Ok(out)
}

/// The sum of the tensors `names`, each of file shape `dims` (its last dimension the rows), as an
/// F32 matrix whose rows are padded with zero weights to `cols_to` (a convolution split in two
/// that reads the same input twice: Qwen-VL's patch embedding over two frames of one image).
pub async fn summed(
    l: &mut Loader<'_>,
    names: &[&str],
    dims: &[u32],
    cols_to: u32,
) -> Result<GpuTensor, Error> {
    let cols: u32 = dims[..dims.len() - 1].iter().product();
    let rows = dims[dims.len() - 1];
    let shape = Shape {
        name: names.join(" + "),
        ty: GgmlType::F32,
        row_len: cols_to as u64,
        rows: rows as u64,
        group_rows: 1,
    };
    let sum = move |read: Vec<Vec<f32>>| {
        let mut out = vec![0f32; cols_to as usize * rows as usize];
        for w in &read {
            for (r, row) in w.chunks(cols as usize).enumerate() {
                let to = &mut out[r * cols_to as usize..][..cols as usize];
                to.iter_mut().zip(row).for_each(|(o, v)| *o += v);
            }
        }
        as_bytes(&out, false)
    };
    let tensors: Vec<(&str, &[u32])> = names.iter().map(|&n| (n, dims)).collect();
    Ok(l.derived(&[shape], &tensors, sum).await?.remove(0))
}

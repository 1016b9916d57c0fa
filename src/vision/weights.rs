//! Weights of a projector file remade as the kernels read them: matrices padded with zero columns
//! (and zero rows) to the kernels' multiples of 32, and matrices the file stores transposed.

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

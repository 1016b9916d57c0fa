//! Model quantization (`wick quantize`): a GGUF file rewritten with its weight matrices in another type, as
//! llama.cpp's `llama-quantize --pure` does without an importance matrix.
//!
//! Tensor by tensor and, within a tensor, a few MB of rows at a time: the model is never in memory. Every matrix
//! (token_embd and output included) gets the target type; 1-D tensors (norms, biases) and the few matrices llama.cpp
//! keeps (the MoE router among them) are copied as they are, and so is a tensor already of its new type. The output
//! depends only on the input: the same file gives the same bytes.

use crate::gguf::write::{TensorSpec, WriteError, Writer};
use crate::gguf::{self, ByteSource, GgmlType, GgufError, Header, SourceError, TensorInfo, Value};
use crate::quant::{self, QuantError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How much of a tensor is converted at once, in weights (16 MiB of f32).
const CHUNK_WEIGHTS: u64 = 4 << 20;

/// What a quantization wrote.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuantizeReport {
    /// Tensors and data bytes written, per tensor type.
    pub per_type: BTreeMap<GgmlType, TypeTotal>,
    /// Tensor data bytes read and written.
    pub bytes_in: u64,
    pub bytes_out: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TypeTotal {
    pub tensors: usize,
    pub bytes: u64,
}

/// Why a model could not be quantized.
#[derive(Debug, thiserror::Error)]
pub enum QuantizeError {
    #[error("reading the header of {source_name}: {error}")]
    Header {
        source_name: String,
        error: GgufError,
    },
    #[error("reading tensor {tensor:?}: {error}")]
    Read { tensor: String, error: SourceError },
    #[error("converting tensor {tensor:?}: {error}")]
    Convert { tensor: String, error: QuantError },
    #[error("writing {}: {error}", path.display())]
    Write { path: PathBuf, error: WriteError },
}

/// Quantizes the GGUF model in `src` to `target`, writing `dst` (through a `.partial` file renamed at the end, so
/// `dst` never holds half a model and may even be the source). `progress` gets (tensor bytes read, total).
pub async fn quantize_model(
    src: &dyn ByteSource,
    dst: &Path,
    target: GgmlType,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<QuantizeReport, QuantizeError> {
    let header = gguf::read_header(src)
        .await
        .map_err(|error| QuantizeError::Header {
            source_name: src.describe(),
            error,
        })?;
    let mut partial = dst.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let write_err = |error: WriteError| QuantizeError::Write {
        path: dst.to_path_buf(),
        error,
    };

    let written = match std::fs::File::create(&partial) {
        Ok(file) => {
            let out = std::io::BufWriter::new(file);
            write_model(src, &header, target, out, dst, progress).await
        }
        Err(e) => Err(write_err(e.into())),
    };
    let result = written.and_then(|report| {
        std::fs::rename(&partial, dst)
            .map(|()| report)
            .map_err(|e| write_err(e.into()))
    });
    if result.is_err() {
        // Best effort: the error that matters is the one returned.
        let _ = std::fs::remove_file(&partial);
    }
    result
}

/// Writes the quantized model to `out` (the file `dst`, named in errors) and closes it.
async fn write_model(
    src: &dyn ByteSource,
    header: &Header,
    target: GgmlType,
    out: impl std::io::Write,
    dst: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<QuantizeReport, QuantizeError> {
    let write_err = |error: WriteError| QuantizeError::Write {
        path: dst.to_path_buf(),
        error,
    };
    let specs: Vec<TensorSpec> = header
        .tensors
        .iter()
        .map(|t| TensorSpec {
            name: t.name.clone(),
            dims: t.dims.clone(),
            ty: output_type(t, target),
        })
        .collect();
    let mut writer =
        Writer::new(out, &output_metadata(&header.metadata, target), &specs).map_err(write_err)?;

    let total: u64 = header.tensors.iter().map(TensorInfo::bytes).sum();
    let mut report = QuantizeReport {
        bytes_in: total,
        ..Default::default()
    };
    let mut done = 0;
    progress(0, total);
    for (t, spec) in header.tensors.iter().zip(&specs) {
        let start = header.tensor_range(t).start;
        let out_bytes = convert_tensor(src, t, start, spec.ty, &mut writer, dst, &mut |n| {
            done += n;
            progress(done, total);
        })
        .await?;
        let entry = report.per_type.entry(spec.ty).or_default();
        entry.tensors += 1;
        entry.bytes += out_bytes;
        report.bytes_out += out_bytes;
    }
    writer.finish().map_err(write_err)?;
    Ok(report)
}

/// The type a tensor is written as: the target for a weight matrix whose rows fit it; where they do not, the
/// 32-weight type llama.cpp falls back to (so SmolLM2's rows of 576 make Q4_K tensors Q5_0); where even that
/// does not fit, or the tensor is no weight matrix, the tensor's own type. MXFP4 is for experts, as in
/// llama.cpp's MXFP4_MOE: the experts' stacked matrices take it, every other matrix Q8_0.
pub fn output_type(t: &TensorInfo, target: GgmlType) -> GgmlType {
    if !is_quantized(t) {
        return t.ty;
    }
    let target = if target == GgmlType::MXFP4 && n_dims(t) < 3 {
        GgmlType::Q8_0
    } else {
        target
    };
    let fits = |ty: GgmlType| t.row_len().is_multiple_of(ty.block_len() as u64);
    let fallback = match target {
        GgmlType::Q4_K => GgmlType::Q5_0,
        GgmlType::Q5_K => GgmlType::Q5_1,
        GgmlType::Q6_K => GgmlType::Q8_0,
        other => other,
    };
    [target, fallback]
        .into_iter()
        .find(|&ty| fits(ty))
        .unwrap_or(t.ty)
}

/// llama.cpp's choice of tensors to quantize: weights of two or more dimensions, except norms, the MoE router,
/// and position/token-type embeddings and the small convolutions of architectures that have them.
fn is_quantized(t: &TensorInfo) -> bool {
    const KEPT: [&str; 6] = [
        "_norm.weight",
        "ffn_gate_inp.weight",
        "position_embd.weight",
        "token_types.weight",
        "ssm_conv1d",
        "attn_rel_b",
    ];
    n_dims(t) >= 2 && t.name.ends_with("weight") && !KEPT.iter().any(|k| t.name.contains(k))
}

/// Dimensions as ggml counts them: trailing 1s do not count.
fn n_dims(t: &TensorInfo) -> usize {
    t.dims.iter().rposition(|&d| d > 1).map_or(1, |i| i + 1)
}

/// The source's metadata with `general.file_type` (llama.cpp's LLAMA_FTYPE_MOSTLY_* of the target) and
/// `general.quantization_version` set.
fn output_metadata(source: &[(String, Value)], target: GgmlType) -> Vec<(String, Value)> {
    // For the K types, the number llama.cpp gives a file whose tensors are mostly of that type.
    let file_type = match target {
        GgmlType::F32 => 0,
        GgmlType::F16 => 1,
        GgmlType::Q4_0 => 2,
        GgmlType::Q4_1 => 3,
        GgmlType::Q8_0 => 7,
        GgmlType::Q5_0 => 8,
        GgmlType::Q5_1 => 9,
        // Every matrix gets the one type (or its fallback): what llama.cpp calls the _S variants.
        GgmlType::Q4_K => 14, // Q4_K_S
        GgmlType::Q5_K => 16, // Q5_K_S
        GgmlType::Q6_K => 18,
        GgmlType::BF16 => 32,
        GgmlType::MXFP4 => 38, // MXFP4_MOE
    };
    let mut metadata = source.to_vec();
    for (key, value) in [
        ("general.file_type", file_type),
        ("general.quantization_version", 2),
    ] {
        match metadata.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = Value::U32(value),
            None => metadata.push((key.to_string(), Value::U32(value))),
        }
    }
    metadata
}

/// Streams one tensor from `src` (its data at absolute offset `start`) into `writer` (writing file `dst`) as type
/// `ty`, a chunk of rows at a time. Returns the bytes written; `read` gets the source bytes of each chunk as it is
/// done.
async fn convert_tensor(
    src: &dyn ByteSource,
    t: &TensorInfo,
    start: u64,
    ty: GgmlType,
    writer: &mut Writer<impl std::io::Write>,
    dst: &Path,
    read: &mut dyn FnMut(u64),
) -> Result<u64, QuantizeError> {
    let read_err = |error| QuantizeError::Read {
        tensor: t.name.clone(),
        error,
    };
    let convert_err = |error| QuantizeError::Convert {
        tensor: t.name.clone(),
        error,
    };
    let write_err = |error| QuantizeError::Write {
        path: dst.to_path_buf(),
        error,
    };

    // The parser guarantees whole blocks per row, so a row's bytes are exact in either type.
    let row_len = t.row_len();
    let row_bytes_in = t.ty.bytes_for(row_len).unwrap_or(0);
    let row_bytes_out = ty.bytes_for(row_len).unwrap_or(0);
    let rows_per_chunk = (CHUNK_WEIGHTS / row_len).max(1);
    let mut buf = Vec::new();
    let mut weights = Vec::new();
    let mut out = Vec::new();
    let mut row = 0;
    while row < t.rows() {
        let rows = rows_per_chunk.min(t.rows() - row);
        buf.resize((rows * row_bytes_in) as usize, 0);
        src.read_at(start + row * row_bytes_in, &mut buf)
            .await
            .map_err(read_err)?;
        if ty == t.ty {
            writer.write_data(&buf).map_err(write_err)?;
        } else {
            weights.resize((rows * row_len) as usize, 0.0);
            quant::dequantize(t.ty, &buf, &mut weights).map_err(convert_err)?;
            out.clear();
            quantize_parallel(ty, &weights, row_len as usize, &mut out).map_err(convert_err)?;
            writer.write_data(&out).map_err(write_err)?;
        }
        read(buf.len() as u64);
        row += rows;
    }
    Ok(t.rows() * row_bytes_out)
}

/// `quant::quantize` over whole rows, split across the machine's cores; the bytes are those of one thread.
fn quantize_parallel(
    ty: GgmlType,
    x: &[f32],
    row_len: usize,
    out: &mut Vec<u8>,
) -> Result<(), QuantError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rows = x.len() / row_len;
    let rows_per_thread = rows.div_ceil(threads).max(1);
    let parts: Vec<Result<Vec<u8>, QuantError>> = std::thread::scope(|s| {
        let handles: Vec<_> = x
            .chunks(rows_per_thread * row_len)
            .map(|part| {
                s.spawn(move || {
                    let mut bytes = Vec::new();
                    quant::quantize(ty, part, &mut bytes).map(|()| bytes)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    for part in parts {
        out.extend_from_slice(&part?);
    }
    Ok(())
}

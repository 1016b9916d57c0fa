//! Weight tensors in GPU buffers, still packed: the file's blocks byte for byte.
//!
//! A tensor larger than the adapter's largest binding is split by rows into parts, each its own buffer;
//! kernels are dispatched once per part.

use super::{Gpu, GpuError};
use crate::gguf::{ByteSource, GgmlType, Header, TensorInfo};

/// Bytes moved per `write_buffer` while streaming a tensor in: the host never holds more than this.
const UPLOAD_CHUNK: u64 = 8 << 20;

/// A run of whole rows of a tensor, in one buffer.
pub struct TensorPart {
    pub buffer: wgpu::Buffer,
    pub first_row: u32,
    pub rows: u32,
}

/// A packed weight matrix on the GPU: `rows` rows of `row_len` weights of type `ty`.
pub struct GpuTensor {
    pub name: String,
    pub ty: GgmlType,
    pub row_len: u32,
    pub rows: u32,
    /// Bytes of one packed row.
    pub row_bytes: u32,
    pub parts: Vec<TensorPart>,
}

impl GpuTensor {
    /// Streams a tensor's byte range from `source` into GPU buffers, calling `progress` with bytes done.
    /// No buffer is larger than `max_part` bytes (the adapter's binding limit, or less to test splitting).
    pub fn upload(
        gpu: &Gpu,
        header: &Header,
        source: &dyn ByteSource,
        info: &TensorInfo,
        max_part: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<GpuTensor, crate::Error> {
        let max_part = max_part.min(gpu.max_binding());
        let too_large = |what: &str, bytes: u64| GpuError::TooLarge {
            what: format!("{what} of tensor {}", info.name),
            bytes,
            limit: max_part,
        };
        let row_bytes = info.ty.bytes_for(info.row_len()).unwrap_or(0);
        let rows = info.rows();
        if row_bytes == 0 || rows == 0 {
            return Err(crate::Error::Model(format!(
                "tensor {} is empty",
                info.name
            )));
        }
        if rows > u32::MAX as u64 || row_bytes > u32::MAX as u64 {
            return Err(too_large("the shape", info.bytes()).into());
        }
        // Rows per part, keeping each part (padded to 4 bytes) within one binding.
        let rows_per_part = (max_part.saturating_sub(4) / row_bytes).min(rows);
        if rows_per_part == 0 {
            return Err(too_large("one row", row_bytes).into());
        }
        let start = header.tensor_range(info).start;
        let mut parts = Vec::new();
        let mut first_row = 0u64;
        while first_row < rows {
            let part_rows = rows_per_part.min(rows - first_row);
            let bytes = part_rows * row_bytes;
            let buffer = gpu.checked(&format!("allocating {}", info.name), || {
                gpu.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&info.name),
                    size: bytes.next_multiple_of(4),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })?;
            let mut done = 0u64;
            let mut chunk = Vec::new();
            while done < bytes {
                let n = UPLOAD_CHUNK.min(bytes - done);
                chunk.clear();
                chunk.resize(n.next_multiple_of(4) as usize, 0);
                source.read_at(
                    start + first_row * row_bytes + done,
                    &mut chunk[..n as usize],
                )?;
                gpu.queue.write_buffer(&buffer, done, &chunk);
                done += n;
                progress(n);
            }
            parts.push(TensorPart {
                buffer,
                first_row: first_row as u32,
                rows: part_rows as u32,
            });
            first_row += part_rows;
        }
        Ok(GpuTensor {
            name: info.name.clone(),
            ty: info.ty,
            row_len: info.row_len() as u32,
            rows: rows as u32,
            row_bytes: row_bytes as u32,
            parts,
        })
    }

    /// Bytes of weights a full matvec over this tensor reads.
    pub fn bytes(&self) -> u64 {
        self.rows as u64 * self.row_bytes as u64
    }
}

/// Reads a small tensor (a norm's weights) into f32 on the host, whatever its type.
pub fn read_f32(
    header: &Header,
    source: &dyn ByteSource,
    info: &TensorInfo,
) -> Result<Vec<f32>, crate::Error> {
    let range = header.tensor_range(info);
    let mut bytes = vec![0u8; (range.end - range.start) as usize];
    source.read_at(range.start, &mut bytes)?;
    if info.ty != GgmlType::F32 {
        return Err(crate::Error::Model(format!(
            "tensor {} of {} is not yet readable",
            info.name, info.ty
        )));
    }
    Ok(bytemuck::pod_collect_to_vec(&bytes))
}

/// A storage buffer holding `data`.
pub fn storage_buffer(gpu: &Gpu, label: &str, data: &[u8]) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    gpu.device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: data,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
        })
}

/// A zeroed storage buffer of `bytes` bytes.
pub fn scratch_buffer(gpu: &Gpu, label: &str, bytes: u64) -> Result<wgpu::Buffer, GpuError> {
    if bytes > gpu.max_binding() {
        return Err(GpuError::TooLarge {
            what: label.to_string(),
            bytes,
            limit: gpu.max_binding(),
        });
    }
    gpu.checked(&format!("allocating {label}"), || {
        gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.max(4).next_multiple_of(4),
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    })
}

/// A uniform buffer holding `data`.
pub fn uniform_buffer(gpu: &Gpu, label: &str, data: &[u8]) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    let mut contents = data.to_vec();
    contents.resize(data.len().next_multiple_of(16).max(16), 0);
    gpu.device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: &contents,
            usage: wgpu::BufferUsages::UNIFORM,
        })
}

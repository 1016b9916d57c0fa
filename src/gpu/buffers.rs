//! Weight tensors in GPU buffers, still packed: the file's blocks, regrouped where their size is not
//! a multiple of four bytes (regroup.rs).
//!
//! A tensor larger than the adapter's largest binding is split by rows into parts, each its own buffer;
//! kernels are dispatched once per part.

use super::regroup::Regroup;
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

/// Matrices that read the same input, their outputs side by side in one row of `rows` values (q, k
/// and v; gate and up). Neighbours of one type are stacked into one tensor, so they take one dispatch;
/// each tensor comes with the index in the output row where its rows start.
pub struct Stacked {
    pub tensors: Vec<(GpuTensor, u32)>,
    pub rows: u32,
}

impl Stacked {
    /// Bytes of weights one pass over every matrix reads.
    pub fn bytes(&self) -> u64 {
        self.tensors.iter().map(|(t, _)| t.bytes()).sum()
    }
}

/// What a packed tensor is: `rows` rows of `row_len` weights of `ty`, in groups of `group_rows` rows
/// (one expert or head of a stacked tensor; the tensor's rows when it is a plain matrix) that parts keep
/// whole where they can.
#[derive(Clone, Debug)]
pub struct Shape {
    pub name: String,
    pub ty: GgmlType,
    pub row_len: u64,
    pub rows: u64,
    pub group_rows: u64,
}

impl Shape {
    /// A file's tensor: every dimension past the first is rows; groups are its second dimension.
    pub fn of(info: &TensorInfo) -> Shape {
        Shape {
            name: info.name.clone(),
            ty: info.ty,
            row_len: info.row_len(),
            rows: info.rows(),
            group_rows: info.dims.get(1).copied().unwrap_or(1).max(1),
        }
    }
}

/// Bytes of a source a read may take beyond what it asked for, to take several near pieces (rows in a
/// new order) in one read.
const READ_SLACK: u64 = 256 << 10;

/// Where a tensor's packed bytes come from.
enum Packed<'a> {
    /// Byte ranges of a source, one after the other: one tensor's, several stacked, or a tensor's
    /// rows in a new order.
    Source(&'a dyn ByteSource, Vec<std::ops::Range<u64>>),
    /// Two tensors' rows of `row_bytes` bytes taken in turn: row 0 of each, then row 1 of each, ...
    Interleaved(&'a dyn ByteSource, [std::ops::Range<u64>; 2], u64),
    /// Bytes made on the host.
    Host(&'a [u8]),
}

impl Packed<'_> {
    async fn read(&self, mut offset: u64, buf: &mut [u8]) -> Result<(), crate::Error> {
        match self {
            Packed::Source(source, ranges) => {
                // The pieces of the ranges that fill buf: (source offset, length).
                let mut pieces = Vec::new();
                let mut want = buf.len() as u64;
                for range in ranges {
                    let len = range.end - range.start;
                    if offset >= len {
                        offset -= len;
                        continue;
                    }
                    let n = (len - offset).min(want);
                    pieces.push((range.start + offset, n));
                    want -= n;
                    offset = 0;
                    if want == 0 {
                        break;
                    }
                }
                // Runs of pieces that lie near each other in the source are one read each.
                let mut at = 0usize;
                let mut first = 0;
                while first < pieces.len() {
                    let (mut lo, mut hi, mut bytes) = (u64::MAX, 0, 0);
                    let mut end = first;
                    while end < pieces.len() {
                        let (start, n) = pieces[end];
                        let (new_lo, new_hi) = (lo.min(start), hi.max(start + n));
                        if end > first && new_hi - new_lo > bytes + n + READ_SLACK {
                            break;
                        }
                        (lo, hi, bytes) = (new_lo, new_hi, bytes + n);
                        end += 1;
                    }
                    if end == first + 1 {
                        let n = pieces[first].1 as usize;
                        source.read_at(lo, &mut buf[at..at + n]).await?;
                        at += n;
                    } else {
                        let mut span = vec![0u8; (hi - lo) as usize];
                        source.read_at(lo, &mut span).await?;
                        for &(start, n) in &pieces[first..end] {
                            let from = (start - lo) as usize;
                            buf[at..at + n as usize]
                                .copy_from_slice(&span[from..from + n as usize]);
                            at += n as usize;
                        }
                    }
                    first = end;
                }
                Ok(())
            }
            Packed::Interleaved(source, [a, b], row_bytes) => {
                // The pairs the bytes asked for touch: a run of rows of each tensor (two reads), then
                // interleaved on the host.
                let pair_bytes = 2 * row_bytes;
                let first = offset / pair_bytes;
                let end = (offset + buf.len() as u64).div_ceil(pair_bytes);
                let run = ((end - first) * row_bytes) as usize;
                let mut rows = vec![0u8; 2 * run];
                let (rows_a, rows_b) = rows.split_at_mut(run);
                source.read_at(a.start + first * row_bytes, rows_a).await?;
                source.read_at(b.start + first * row_bytes, rows_b).await?;
                let row = *row_bytes as usize;
                let pairs: Vec<u8> = rows_a
                    .chunks(row)
                    .zip(rows_b.chunks(row))
                    .flat_map(|(ra, rb)| ra.iter().chain(rb))
                    .copied()
                    .collect();
                let skip = (offset - first * pair_bytes) as usize;
                buf.copy_from_slice(&pairs[skip..skip + buf.len()]);
                Ok(())
            }
            Packed::Host(bytes) => {
                let at = offset as usize;
                buf.copy_from_slice(&bytes[at..at + buf.len()]);
                Ok(())
            }
        }
    }
}

/// A tensor's buffers and the bytes that go into them. Loading a model allocates every buffer first and
/// fills them after, so that a model the GPU cannot hold is refused before its weights are read.
pub struct Fill<'a> {
    /// The tensor's name, for messages.
    name: String,
    /// Each part's buffer and how many bytes of the packed tensor it takes, in order.
    parts: Vec<(wgpu::Buffer, u64)>,
    packed: Packed<'a>,
    /// How the blocks are regrouped on the way, where their type needs it.
    regroup: Option<Regroup>,
}

impl<'a> Fill<'a> {
    fn of(tensor: &GpuTensor, packed: Packed<'a>) -> Fill<'a> {
        Fill {
            name: tensor.name.clone(),
            parts: tensor.part_buffers(),
            packed,
            regroup: Regroup::of(tensor.ty),
        }
    }

    /// Bytes made on the host into buffers (`GpuTensor::part_buffers`, or one buffer and its size),
    /// as they are: f32 or f16 values, whose words are whole.
    pub fn from_host(name: &str, parts: Vec<(wgpu::Buffer, u64)>, bytes: &'a [u8]) -> Fill<'a> {
        assert_eq!(
            parts.iter().map(|(_, n)| n).sum::<u64>(),
            bytes.len() as u64
        );
        Fill {
            name: name.to_string(),
            parts,
            packed: Packed::Host(bytes),
            regroup: None,
        }
    }

    pub fn bytes(&self) -> u64 {
        self.parts.iter().map(|(_, n)| n).sum()
    }

    /// Streams the bytes in pieces of about `UPLOAD_CHUNK` (whole groups of blocks where they are
    /// regrouped), calling `progress` with bytes done.
    pub async fn run(self, gpu: &Gpu, progress: &mut dyn FnMut(u64)) -> Result<(), crate::Error> {
        let piece = match self.regroup {
            Some(r) => UPLOAD_CHUNK - UPLOAD_CHUNK % r.group_bytes() as u64,
            None => UPLOAD_CHUNK,
        };
        let mut at = 0u64;
        let (mut chunk, mut regrouped) = (Vec::new(), Vec::new());
        for (buffer, bytes) in &self.parts {
            let mut done = 0u64;
            while done < *bytes {
                let n = piece.min(bytes - done);
                chunk.clear();
                chunk.resize(n.next_multiple_of(4) as usize, 0);
                (self.packed.read(at + done, &mut chunk[..n as usize]).await)
                    .map_err(|e| read_failed(&self.name, e))?;
                let words = match self.regroup {
                    Some(r) => {
                        regrouped.resize(r.gpu_bytes(n as usize), 0);
                        r.apply(&chunk[..n as usize], &mut regrouped);
                        &regrouped
                    }
                    None => &chunk,
                };
                gpu.queue.write_buffer(buffer, done, words);
                done += n;
                progress(n);
            }
            at += bytes;
        }
        Ok(())
    }
}

/// A read that failed while loading, naming the tensor it was for.
pub fn read_failed(tensor: &str, e: crate::Error) -> crate::Error {
    match e {
        crate::Error::Source(e) => crate::Error::Model(format!("reading {tensor}: {e}")),
        e => e,
    }
}

impl GpuTensor {
    /// Its first `rows` rows, in the same buffers: a head that gives the logits of the tokens a
    /// vocabulary lists first alone.
    pub fn first_rows(&self, rows: u32) -> GpuTensor {
        let rows = rows.min(self.rows);
        let parts = (self.parts.iter())
            .filter(|p| p.first_row < rows)
            .map(|p| TensorPart {
                buffer: p.buffer.clone(),
                first_row: p.first_row,
                rows: p.rows.min(rows - p.first_row),
            })
            .collect();
        GpuTensor {
            name: self.name.clone(),
            ty: self.ty,
            row_len: self.row_len,
            rows,
            row_bytes: self.row_bytes,
            parts,
        }
    }

    /// Streams a tensor's byte range from `source` into GPU buffers, calling `progress` with bytes done.
    /// No buffer is larger than `max_part` bytes (the adapter's binding limit, or less to test splitting).
    pub async fn upload(
        gpu: &Gpu,
        header: &Header,
        source: &dyn ByteSource,
        info: &TensorInfo,
        max_part: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<GpuTensor, crate::Error> {
        GpuTensor::upload_stacked(gpu, header, source, &[info], max_part, progress).await
    }

    /// Streams tensors of one type and row length into one tensor, their rows one after the other
    /// (matrices that read the same input, so that one dispatch does the work of several).
    pub async fn upload_stacked(
        gpu: &Gpu,
        header: &Header,
        source: &dyn ByteSource,
        infos: &[&TensorInfo],
        max_part: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<GpuTensor, crate::Error> {
        let infos: Vec<_> = infos.iter().map(|&i| (i, None)).collect();
        GpuTensor::upload_reordered(gpu, header, source, &infos, max_part, progress).await
    }

    /// As `upload_stacked`, with the rows of a tensor that comes with an order taken in that order:
    /// its row r is the file's row `order[r]`.
    pub async fn upload_reordered(
        gpu: &Gpu,
        header: &Header,
        source: &dyn ByteSource,
        tensors: &[(&TensorInfo, Option<&[u32]>)],
        max_part: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<GpuTensor, crate::Error> {
        let (tensor, fill) =
            GpuTensor::allocate_reordered(gpu, header, source, tensors, max_part).await?;
        fill.run(gpu, progress).await?;
        Ok(tensor)
    }

    /// The buffers `upload_reordered` fills, allocated, and the fill that reads the tensors into them.
    pub async fn allocate_reordered<'a>(
        gpu: &Gpu,
        header: &Header,
        source: &'a dyn ByteSource,
        tensors: &[(&TensorInfo, Option<&[u32]>)],
        max_part: u64,
    ) -> Result<(GpuTensor, Fill<'a>), crate::Error> {
        let infos: Vec<&TensorInfo> = tensors.iter().map(|(i, _)| *i).collect();
        let first = Shape::of(infos[0]);
        assert!(infos
            .iter()
            .all(|i| i.ty == first.ty && i.row_len() == first.row_len));
        let names: Vec<&str> = infos.iter().map(|i| i.name.as_str()).collect();
        let shape = Shape {
            name: names.join(" + "),
            rows: infos.iter().map(|i| i.rows()).sum(),
            // Several matrices: groups of rows that divide each (for q, k and v, whole heads).
            group_rows: match infos.as_slice() {
                [_] => first.group_rows,
                _ => infos.iter().map(|i| i.rows()).fold(0, gcd),
            },
            ..first
        };
        let row_bytes = first.ty.bytes_for(first.row_len).unwrap_or(0);
        let mut ranges = Vec::new();
        for (info, order) in tensors {
            let range = header.tensor_range(info);
            match order {
                None => ranges.push(range),
                Some(order) => {
                    assert_eq!(
                        order.len() as u64,
                        info.rows(),
                        "{}: one row each",
                        info.name
                    );
                    ranges.extend(order.iter().map(|&r| {
                        let start = range.start + r as u64 * row_bytes;
                        start..start + row_bytes
                    }));
                }
            }
        }
        let tensor = GpuTensor::allocate(gpu, &shape, max_part).await?;
        let fill = Fill::of(&tensor, Packed::Source(source, ranges));
        Ok((tensor, fill))
    }

    /// Streams two tensors of one shape and type into one, their rows interleaved: a's row 0, b's row
    /// 0, a's row 1, ... (gate and up, so that one kernel finds both rows of a pair side by side).
    pub async fn upload_interleaved(
        gpu: &Gpu,
        header: &Header,
        source: &dyn ByteSource,
        pair: [&TensorInfo; 2],
        max_part: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<GpuTensor, crate::Error> {
        let (tensor, fill) =
            GpuTensor::allocate_interleaved(gpu, header, source, pair, max_part).await?;
        fill.run(gpu, progress).await?;
        Ok(tensor)
    }

    /// The buffers `upload_interleaved` fills, allocated, and the fill that reads the pair into them.
    pub async fn allocate_interleaved<'a>(
        gpu: &Gpu,
        header: &Header,
        source: &'a dyn ByteSource,
        [a, b]: [&TensorInfo; 2],
        max_part: u64,
    ) -> Result<(GpuTensor, Fill<'a>), crate::Error> {
        assert!(a.ty == b.ty && a.dims == b.dims);
        let first = Shape::of(a);
        let shape = Shape {
            name: format!("{} + {}", a.name, b.name),
            rows: 2 * first.rows,
            group_rows: 2,
            ..first
        };
        let row_bytes = a.ty.bytes_for(first.row_len).unwrap_or(0);
        let ranges = [header.tensor_range(a), header.tensor_range(b)];
        let tensor = GpuTensor::allocate(gpu, &shape, max_part).await?;
        let fill = Fill::of(&tensor, Packed::Interleaved(source, ranges, row_bytes));
        Ok((tensor, fill))
    }

    /// A tensor made on the host (weights derived at load), packed as `shape.ty`.
    pub async fn from_host(
        gpu: &Gpu,
        shape: &Shape,
        bytes: &[u8],
    ) -> Result<GpuTensor, crate::Error> {
        let tensor = GpuTensor::allocate(gpu, shape, gpu.max_binding()).await?;
        Fill::of(&tensor, Packed::Host(bytes))
            .run(gpu, &mut |_| {})
            .await?;
        Ok(tensor)
    }

    /// Each part's buffer and the bytes of the packed tensor it holds, in order.
    pub fn part_buffers(&self) -> Vec<(wgpu::Buffer, u64)> {
        let row_bytes = self.row_bytes as u64;
        let parts = self.parts.iter();
        parts
            .map(|p| (p.buffer.clone(), p.rows as u64 * row_bytes))
            .collect()
    }

    /// Empty buffers for a tensor of `shape`, split by rows into parts of at most `max_part` bytes.
    pub async fn allocate(
        gpu: &Gpu,
        shape: &Shape,
        max_part: u64,
    ) -> Result<GpuTensor, crate::Error> {
        let max_part = max_part.min(gpu.max_binding());
        let too_large = |what: &str, bytes: u64| GpuError::TooLarge {
            what: format!("{what} of tensor {}", shape.name),
            bytes,
            limit: max_part,
        };
        let row_bytes = shape.ty.bytes_for(shape.row_len).unwrap_or(0);
        let rows = shape.rows;
        if row_bytes == 0 || rows == 0 {
            return Err(crate::Error::Model(format!(
                "tensor {} is empty",
                shape.name
            )));
        }
        if rows > u32::MAX as u64 || row_bytes > u32::MAX as u64 {
            return Err(too_large("the shape", rows.saturating_mul(row_bytes)).into());
        }
        // Rows per part, keeping each part (padded: `gpu_bytes`) within one binding, whole groups
        // (experts, heads) in one part where a group fits, and else pairs of rows whole where groups
        // are even (the kernels that fuse a projection with what follows take rows 2p and 2p + 1).
        let mut rows_per_part = (max_part / row_bytes).min(rows);
        while rows_per_part > 0 && gpu_bytes(shape.ty, rows_per_part * row_bytes) > max_part {
            rows_per_part -= 1;
        }
        if rows_per_part == 0 {
            return Err(too_large("one row", row_bytes).into());
        }
        if rows_per_part < rows {
            let whole = match shape.group_rows {
                g if g <= rows_per_part => g,
                g if g % 2 == 0 => 2,
                _ => 1,
            };
            rows_per_part = (rows_per_part - rows_per_part % whole).max(1);
        }
        let mut parts = Vec::new();
        let mut first_row = 0u64;
        while first_row < rows {
            let part_rows = rows_per_part.min(rows - first_row);
            let bytes = gpu_bytes(shape.ty, part_rows * row_bytes);
            let buffer = gpu
                .checked(
                    &format!("allocating {} ({bytes} bytes)", shape.name),
                    || {
                        gpu.device.create_buffer(&wgpu::BufferDescriptor {
                            label: Some(&shape.name),
                            size: bytes,
                            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                            mapped_at_creation: false,
                        })
                    },
                )
                .await?;
            parts.push(TensorPart {
                buffer,
                first_row: first_row as u32,
                rows: part_rows as u32,
            });
            first_row += part_rows;
        }
        Ok(GpuTensor {
            name: shape.name.clone(),
            ty: shape.ty,
            row_len: shape.row_len as u32,
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

/// Bytes of the buffer that holds `bytes` of packed blocks of `ty`: regrouped (`Regroup::gpu_bytes`)
/// or as they are, in whole words.
fn gpu_bytes(ty: GgmlType, bytes: u64) -> u64 {
    match Regroup::of(ty) {
        Some(r) => r.gpu_bytes(bytes as usize) as u64,
        None => bytes.next_multiple_of(4),
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Reads a tensor into f32 on the host, dequantized whatever its type (norms, small derived weights).
pub async fn read_f32(
    header: &Header,
    source: &dyn ByteSource,
    info: &TensorInfo,
) -> Result<Vec<f32>, crate::Error> {
    let range = header.tensor_range(info);
    let mut bytes = vec![0u8; (range.end - range.start) as usize];
    source.read_at(range.start, &mut bytes).await?;
    let mut out = vec![0f32; info.elements() as usize];
    crate::quant::dequantize(info.ty, &bytes, &mut out)
        .map_err(|e| crate::Error::Model(format!("tensor {} cannot be read: {e}", info.name)))?;
    Ok(out)
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
pub async fn scratch_buffer(gpu: &Gpu, label: &str, bytes: u64) -> Result<wgpu::Buffer, GpuError> {
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
    .await
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

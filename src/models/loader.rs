//! Tensors from the file to the GPU: each checked against the shape the model expects, split across
//! bindings where a tensor is larger than one, its buffers allocated as the model asks for it and its
//! bytes streamed in pieces, with the load's progress, once every buffer is allocated (`fill`): a model
//! the adapter cannot hold is refused before its weights are downloaded. Small tensors (norm gains,
//! biases) wait for the fill too; `host_f32` reads at once, for the few values the model is built from.

use super::Meta;
use crate::gguf::{ByteSource, Header, TensorInfo};
use crate::gpu::{
    read_f32, read_failed, scratch_buffer, Fill, Gpu, GpuTensor, KvType, Regroup, Shape, Stacked,
};
use crate::ops::glu::GateUp;
use crate::ops::moe::ExpertsGateUp;
use crate::Error;
use std::sync::Arc;

/// Streams tensors from the source into the GPU, checking each against the shape the model expects.
/// Its metadata is at hand through `Meta`.
pub struct Loader<'a> {
    pub gpu: Arc<Gpu>,
    pub meta: Meta<'a>,
    pub source: &'a dyn ByteSource,
    pub progress: &'a mut dyn FnMut(u64, u64),
    /// Tables that could stay in the file (Gemma 4's per-layer embeddings) go to the GPU anyway.
    pub per_layer_on_gpu: bool,
    /// How attention layers' KV caches hold their values.
    pub kv_cache: KvType,
    /// The head's rows where fewer than the vocabulary's (`LoadOptions::head_rows`).
    pub head_rows: Option<u32>,
    /// Buffers allocated and not yet filled, in the order the model asked for them.
    fills: Vec<Pending<'a>>,
    done: u64,
    total: u64,
}

impl<'a> std::ops::Deref for Loader<'a> {
    type Target = Meta<'a>;
    fn deref(&self) -> &Meta<'a> {
        &self.meta
    }
}

impl<'a> Loader<'a> {
    pub fn new(
        gpu: Arc<Gpu>,
        header: &'a Header,
        source: &'a dyn ByteSource,
        progress: &'a mut dyn FnMut(u64, u64),
    ) -> Result<Loader<'a>, Error> {
        let total = header.tensors.iter().map(|t| t.bytes()).sum();
        Ok(Loader {
            gpu,
            meta: Meta::new(header)?,
            source,
            progress,
            per_layer_on_gpu: false,
            kv_cache: KvType::F32,
            head_rows: None,
            fills: Vec::new(),
            done: 0,
            total,
        })
    }

    /// Logits a head gives for a vocabulary of `n_vocab` tokens: one a token, or those listed
    /// first alone (`head_rows`).
    pub fn n_logits(&self, n_vocab: u32) -> u32 {
        self.head_rows
            .map_or(n_vocab, |rows| rows.clamp(1, n_vocab))
    }

    fn info(&self, name: &str, shape: &[u32]) -> Result<&'a TensorInfo, Error> {
        let t = self
            .meta
            .header
            .tensor(name)
            .ok_or_else(|| Error::Model(format!("tensor {name} is missing")))?;
        let want: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        // Trailing dimensions of 1 say nothing ([n] and [n, 1] are one vector), as in ggml.
        let trim = |dims: &[u64]| dims.len() - dims.iter().rev().take_while(|&&d| d == 1).count();
        if t.dims[..trim(&t.dims)] != want[..trim(&want)] {
            return Err(Error::Model(format!(
                "tensor {name} has shape {:?}, expected {want:?}",
                t.dims
            )));
        }
        Ok(t)
    }

    /// A weight matrix of `rows` rows of `cols` weights, packed as in the file.
    pub async fn matrix(&mut self, name: &str, cols: u32, rows: u32) -> Result<GpuTensor, Error> {
        self.packed(name, &[cols, rows]).await
    }

    /// `n` matrices of `rows` rows of `cols` weights stacked in one tensor (experts, or per-head
    /// matrices), packed as in the file; kernels see n * rows rows.
    pub async fn matrices(
        &mut self,
        name: &str,
        cols: u32,
        rows: u32,
        n: u32,
    ) -> Result<GpuTensor, Error> {
        self.packed(name, &[cols, rows, n]).await
    }

    /// Matrices of `cols` weights per row that read the same input, by name and rows, stacked where
    /// their types agree.
    pub async fn stacked(
        &mut self,
        names: &[String],
        cols: u32,
        rows: &[u32],
    ) -> Result<Stacked, Error> {
        self.stacked_reordered(names, cols, rows, &vec![None; names.len()])
            .await
    }

    /// As `stacked`, with the rows of a matrix that comes with an order taken in that order: its row
    /// r is the file's row `order[r]`.
    pub async fn stacked_reordered(
        &mut self,
        names: &[String],
        cols: u32,
        rows: &[u32],
        orders: &[Option<&[u32]>],
    ) -> Result<Stacked, Error> {
        let infos = names
            .iter()
            .zip(rows)
            .zip(orders)
            .map(|((name, &r), &order)| Ok((self.info(name, &[cols, r])?, order)))
            .collect::<Result<Vec<_>, Error>>()?;
        let mut tensors = Vec::new();
        let mut offset = 0;
        for run in infos.chunk_by(|a, b| a.0.ty == b.0.ty) {
            let tensor = self.upload(run).await?;
            let rows = tensor.rows;
            tensors.push((tensor, offset));
            offset += rows;
        }
        Ok(Stacked {
            tensors,
            rows: offset,
        })
    }

    /// A SwiGLU block's gate and up matrices (`rows` rows of `cols` weights each): interleaved where
    /// their types agree, stacked otherwise.
    pub async fn gate_up(
        &mut self,
        [gate, up]: [&str; 2],
        cols: u32,
        rows: u32,
    ) -> Result<GateUp, Error> {
        let (g, u) = (
            self.info(gate, &[cols, rows])?,
            self.info(up, &[cols, rows])?,
        );
        if g.ty != u.ty {
            let names = [gate.to_string(), up.to_string()];
            return Ok(GateUp::Apart(
                self.stacked(&names, cols, &[rows, rows]).await?,
            ));
        }
        Ok(GateUp::Interleaved(self.interleaved([g, u]).await?))
    }

    /// A mixture of experts' gate and up (`n` matrices of `rows` rows of `cols` weights each,
    /// stacked): their rows interleaved where their types agree (`ExpertsGateUp`), each as it is
    /// otherwise.
    pub async fn gate_up_experts(
        &mut self,
        [gate, up]: [&str; 2],
        cols: u32,
        rows: u32,
        n: u32,
    ) -> Result<ExpertsGateUp, Error> {
        let dims = [cols, rows, n];
        let (g, u) = (self.info(gate, &dims)?, self.info(up, &dims)?);
        if g.ty != u.ty {
            return Ok(ExpertsGateUp::Apart {
                gate: self.matrices(gate, cols, rows, n).await?,
                up: self.matrices(up, cols, rows, n).await?,
            });
        }
        Ok(ExpertsGateUp::Interleaved(self.interleaved([g, u]).await?))
    }

    /// The converter's fused gate and up experts (ffn_gate_up_exps, `n` matrices of 2 `rows` rows:
    /// each expert's gate rows, then its up rows), loaded with their rows interleaved as
    /// `gate_up_experts` interleaves two tensors.
    pub async fn gate_up_experts_fused(
        &mut self,
        name: &str,
        cols: u32,
        rows: u32,
        n: u32,
    ) -> Result<ExpertsGateUp, Error> {
        let t = self.info(name, &[cols, 2 * rows, n])?;
        let order = interleaving_halves(rows, n);
        Ok(ExpertsGateUp::Interleaved(
            self.upload(&[(t, Some(&order))]).await?,
        ))
    }

    /// Two tensors of one type and shape as one, their rows taken in turn: row 0 of each, then row 1
    /// of each, ...
    async fn interleaved(&mut self, [a, b]: [&'a TensorInfo; 2]) -> Result<GpuTensor, Error> {
        check_row_len(a)?;
        let max_part = self.gpu.max_binding();
        let (tensor, fill) = GpuTensor::allocate_interleaved(
            &self.gpu,
            self.meta.header,
            self.source,
            [a, b],
            max_part,
        )
        .await?;
        self.fills.push(Pending::Tensor(fill));
        Ok(tensor)
    }

    /// A gated feed-forward block's gate and up as one matrix of `2 rows` rows, gate's first (Phi-3's
    /// ffn_up), loaded with their rows interleaved as `gate_up` interleaves two.
    pub async fn gate_up_fused(
        &mut self,
        name: &str,
        cols: u32,
        rows: u32,
    ) -> Result<GateUp, Error> {
        let t = self.info(name, &[cols, 2 * rows])?;
        let order = interleaving_halves(rows, 1);
        Ok(GateUp::Interleaved(
            self.upload(&[(t, Some(&order))]).await?,
        ))
    }

    async fn packed(&mut self, name: &str, shape: &[u32]) -> Result<GpuTensor, Error> {
        let t = self.info(name, shape)?;
        self.upload(&[(t, None)]).await
    }

    async fn upload(
        &mut self,
        infos: &[(&TensorInfo, Option<&[u32]>)],
    ) -> Result<GpuTensor, Error> {
        check_row_len(infos[0].0)?;
        let max_part = self.gpu.max_binding();
        let (tensor, fill) = GpuTensor::allocate_reordered(
            &self.gpu,
            self.meta.header,
            self.source,
            infos,
            max_part,
        )
        .await?;
        self.fills.push(Pending::Tensor(fill));
        Ok(tensor)
    }

    /// Reads every tensor asked for so far into its buffers, in the order the model asked for them.
    pub async fn fill(&mut self) -> Result<(), Error> {
        let (done, total, progress) = (&mut self.done, self.total, &mut *self.progress);
        let mut flushed = *done;
        for pending in self.fills.drain(..) {
            // Each write is staged in host memory until a submit has run it: without a submit now
            // and then, a model's weights would be held twice until the first token.
            if *done - flushed >= FLUSH_WRITES {
                self.gpu.flush_writes();
                flushed = *done;
            }
            match pending {
                Pending::Tensor(fill) => {
                    fill.run(&self.gpu, &mut |n| {
                        *done += n;
                        progress(*done, total);
                    })
                    .await?
                }
                Pending::Made {
                    label,
                    parts,
                    tensors,
                    make,
                } => {
                    let mut read = Vec::with_capacity(tensors.len());
                    for t in tensors {
                        let floats = read_f32(self.meta.header, self.source, t).await;
                        read.push(floats.map_err(|e| read_failed(&t.name, e))?);
                        *done += t.bytes();
                        progress(*done, total);
                    }
                    let bytes = make(read);
                    Fill::from_host(&label, parts, &bytes)
                        .run(&self.gpu, &mut |_| {})
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// Counts a tensor as loaded that stays in the file (read later by rows).
    pub fn skip(&mut self, name: &str) {
        if let Some(t) = self.meta.header.tensor(name) {
            self.done += t.bytes();
            (self.progress)(self.done, self.total);
        }
    }

    /// A tensor of the given shape, dequantized to f32 on the host (weights the model derives others
    /// from at load).
    pub async fn host_f32(&mut self, name: &str, shape: &[u32]) -> Result<Vec<f32>, Error> {
        let t = self.info(name, shape)?;
        let data =
            (read_f32(self.meta.header, self.source, t).await).map_err(|e| read_failed(name, e))?;
        self.done += t.bytes();
        (self.progress)(self.done, self.total);
        Ok(data)
    }

    /// A small vector (norm weights, biases), as f32.
    pub async fn vector(&mut self, name: &str, len: u32) -> Result<wgpu::Buffer, Error> {
        self.vectors(name, len, 1).await
    }

    /// `n` small vectors of `len` in one tensor (each expert's bias), as f32.
    pub async fn vectors(&mut self, name: &str, len: u32, n: u32) -> Result<wgpu::Buffer, Error> {
        let shape = [len, n];
        let shape = &shape[..1 + (n > 1) as usize];
        let floats = len as usize * n as usize;
        self.floats(name, &[(name, shape)], floats, |mut read| read.remove(0))
            .await
    }

    /// A buffer of `len` f32 values that `make` derives from small tensors (by name and shape), read
    /// as f32 when the buffer is filled: biases or norm gains concatenated, their elements reordered.
    pub async fn floats(
        &mut self,
        label: &str,
        tensors: &[(&str, &[u32])],
        len: usize,
        make: impl FnOnce(Vec<Vec<f32>>) -> Vec<f32> + 'a,
    ) -> Result<wgpu::Buffer, Error> {
        let bytes = len as u64 * 4;
        let buffer = scratch_buffer(&self.gpu, label, bytes).await?;
        self.made(label, vec![(buffer.clone(), bytes)], tensors, move |read| {
            let floats = make(read);
            assert_eq!(floats.len(), len);
            bytemuck::cast_slice(&floats).to_vec()
        })?;
        Ok(buffer)
    }

    /// Tensors of these shapes packed on the host by `make` (their bytes one after the other) from
    /// tensors of the file (by name and shape), read as f32 when they are filled: weights the model
    /// derives from others.
    pub async fn derived(
        &mut self,
        shapes: &[Shape],
        tensors: &[(&str, &[u32])],
        make: impl FnOnce(Vec<Vec<f32>>) -> Vec<u8> + 'a,
    ) -> Result<Vec<GpuTensor>, Error> {
        let mut made = Vec::new();
        for shape in shapes {
            // Their bytes go to the GPU as they are made.
            assert!(
                Regroup::of(shape.ty).is_none(),
                "{}: derived tensors are made in types of whole words",
                shape.name
            );
            made.push(GpuTensor::allocate(&self.gpu, shape, self.gpu.max_binding()).await?);
        }
        let parts = made.iter().flat_map(|t| t.part_buffers()).collect();
        let names: Vec<&str> = shapes.iter().map(|s| s.name.as_str()).collect();
        self.made(&names.join(" + "), parts, tensors, make)?;
        Ok(made)
    }

    fn made(
        &mut self,
        label: &str,
        parts: Vec<(wgpu::Buffer, u64)>,
        tensors: &[(&str, &[u32])],
        make: impl FnOnce(Vec<Vec<f32>>) -> Vec<u8> + 'a,
    ) -> Result<(), Error> {
        let tensors = tensors
            .iter()
            .map(|&(name, shape)| self.info(name, shape))
            .collect::<Result<Vec<_>, Error>>()?;
        self.fills.push(Pending::Made {
            label: label.to_string(),
            parts,
            tensors,
            make: Box::new(make),
        });
        Ok(())
    }
}

/// Bytes written to buffers between submits that free their staging copies.
const FLUSH_WRITES: u64 = 256 << 20;

/// A buffer allocated and waiting for its bytes.
enum Pending<'a> {
    /// A packed tensor, streamed from the source.
    Tensor(Fill<'a>),
    /// Bytes made on the host from tensors read whole, as f32, into buffers (each with its size).
    Made {
        label: String,
        parts: Vec<(wgpu::Buffer, u64)>,
        tensors: Vec<&'a TensorInfo>,
        #[allow(clippy::type_complexity)]
        make: Box<dyn FnOnce(Vec<Vec<f32>>) -> Vec<u8> + 'a>,
    },
}

/// The kernels take rows in 32-weight chunks.
fn check_row_len(info: &TensorInfo) -> Result<(), Error> {
    let cols = info.row_len();
    if !cols.is_multiple_of(32) {
        return Err(Error::Model(format!(
            "tensor {}: rows of {cols} weights are not a multiple of 32",
            info.name
        )));
    }
    Ok(())
}

/// The order that interleaves the halves of each of `n` blocks of 2 `rows` rows (gate's rows, then
/// up's): block b's rows r and `rows` + r become rows 2 (b rows + r) and 2 (b rows + r) + 1.
pub fn interleaving_halves(rows: u32, n: u32) -> Vec<u32> {
    let block =
        move |b: u32| (0..rows).flat_map(move |r| [2 * rows * b + r, 2 * rows * b + rows + r]);
    (0..n).flat_map(block).collect()
}

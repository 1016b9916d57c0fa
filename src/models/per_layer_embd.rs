//! Gemma 4's per-layer embeddings: a second embedding table (`per_layer_token_embd`) gives each token
//! a row of `width` values for every layer. With a projection of the token's embedding, normed, they
//! make each layer's input, which after the feed-forward block gates a small projection back into the
//! residual stream.
//!
//! The table is most of an E2B file (262144 rows of 35 x 256) while a token reads one row, so it can
//! stay off the GPU: `TokenRows` reads the run's rows from the file (natively through the file's own
//! handle, in the browser from the cached file) and writes them with the run's input. Where the
//! source cannot be kept, or the load asks for it, the table goes to the GPU and the embedding kernel
//! reads it there.
//!
//! A row given in place of a token's embedding (an image's token, `Engine::hold_image`) has no id in the
//! table; as llama.cpp runs Gemma 4, its per-layer row is the padding token's, row 0.

use super::loader::Loader;
use crate::gguf::{GgmlType, SharedSource};
use crate::gpu::{scratch_buffer, Gpu, GpuTensor, Plan};
use crate::ops::glu::Activation;
use crate::ops::{embed, matvec, per_layer_inputs, rms_norm};
use crate::Error;

const TABLE: &str = "per_layer_token_embd.weight";

/// The table row that tokens past the vocabulary read: the padding token's.
const PADDING_ROW: u32 = 0;

/// The model-wide part: the table, the projection of the embedding, and the run's inputs.
pub struct PerLayerEmbd {
    shape: per_layer_inputs::Shape,
    table: Table,
    model_proj: GpuTensor,   // per_layer_model_proj: (n_layer * width, n_embd)
    proj_norm: wgpu::Buffer, // per_layer_proj_norm: (width)
    rows: wgpu::Buffer,      // (batch, n_layer, width): the run's rows of the table, scaled
    inputs: wgpu::Buffer,    // (batch, n_layer, width): each layer's input
    gated: wgpu::Buffer,     // (batch, width): GELU of the gate times the layer's input
    layers: Vec<LayerInput>,
}

/// Where the table's rows come from.
enum Table {
    /// On the GPU: the embedding kernel reads the run's rows.
    Gpu(GpuTensor),
    /// In the file: written with each run's input (`Forward::token_rows`).
    Host,
}

/// One layer's part: its input gates a projection into the residual stream.
struct LayerInput {
    inp_gate: GpuTensor,     // (width, n_embd)
    proj: GpuTensor,         // (n_embd, width)
    post_norm: wgpu::Buffer, // (n_embd)
}

/// The rows of a table kept off the GPU that each run's tokens need, read from the file and written
/// before the run.
pub struct TokenRows {
    source: SharedSource,
    /// Where the table's data starts in the file.
    offset: u64,
    ty: GgmlType,
    row_len: u32,
    row_bytes: u64,
    /// The rows are multiplied by this (sqrt(width)).
    scale: f32,
    /// Rows in the table: the vocabulary.
    n_rows: u32,
    buffer: wgpu::Buffer,
}

impl TokenRows {
    /// Reads the rows of `tokens` and writes them to the GPU for the next run.
    pub async fn write(&self, gpu: &Gpu, tokens: &[u32]) -> Result<(), Error> {
        let n = self.row_len as usize;
        let mut bytes = vec![0u8; self.row_bytes as usize];
        let mut rows = vec![0f32; n * tokens.len()];
        for (&token, row) in tokens.iter().zip(rows.chunks_mut(n)) {
            let token = if token < self.n_rows {
                token
            } else {
                PADDING_ROW
            };
            let at = self.offset + token as u64 * self.row_bytes;
            self.source.read_at(at, &mut bytes).await?;
            crate::quant::dequantize(self.ty, &bytes, row)
                .map_err(|e| Error::Model(format!("{TABLE}: {e}")))?;
            row.iter_mut().for_each(|v| *v *= self.scale);
        }
        gpu.queue
            .write_buffer(&self.buffer, 0, bytemuck::cast_slice(&rows));
        Ok(())
    }

    /// Bytes read from the file for each token.
    pub fn row_bytes(&self) -> u64 {
        self.row_bytes
    }
}

impl PerLayerEmbd {
    /// The weights for `n_layer` layers of `width` values, and buffers for runs of `batch` tokens;
    /// with the table left in the file where `off_gpu` and the source can be kept, in which case the
    /// `TokenRows` that feeds it comes back too.
    pub async fn load(
        l: &mut Loader<'_>,
        (n_embd, n_vocab, n_layer, width): (u32, u32, u32, u32),
        (batch, eps, off_gpu): (u32, f32, bool),
    ) -> Result<(PerLayerEmbd, Option<TokenRows>), Error> {
        let gpu = l.gpu.clone();
        let all = n_layer * width;
        let info = l
            .header
            .tensor(TABLE)
            .ok_or_else(|| Error::Model(format!("tensor {TABLE} is missing")))?;
        if info.dims != [all as u64, n_vocab as u64] {
            return Err(Error::Model(format!(
                "tensor {TABLE} has shape {:?}: the per-layer embeddings of {n_layer} layers of {width} (embedding_length_per_layer_input) for {n_vocab} tokens are [{all}, {n_vocab}]",
                info.dims
            )));
        }
        let rows = scratch_buffer(&gpu, "per-layer rows", batch as u64 * all as u64 * 4).await?;
        let source = match off_gpu {
            true => l.source.reopen(),
            false => None,
        };
        let (table, token_rows) = match source {
            Some(source) => {
                let row_bytes = info.bytes() / n_vocab as u64;
                l.skip(TABLE);
                let token_rows = TokenRows {
                    source,
                    offset: l.header.tensor_range(info).start,
                    ty: info.ty,
                    row_len: all,
                    row_bytes,
                    scale: (width as f32).sqrt(),
                    n_rows: n_vocab,
                    buffer: rows.clone(),
                };
                (Table::Host, Some(token_rows))
            }
            None => (Table::Gpu(l.matrix(TABLE, all, n_vocab).await?), None),
        };
        let mut layers = Vec::with_capacity(n_layer as usize);
        for i in 0..n_layer {
            let name = |t: &str| format!("blk.{i}.{t}.weight");
            layers.push(LayerInput {
                inp_gate: l.matrix(&name("inp_gate"), n_embd, width).await?,
                proj: l.matrix(&name("proj"), width, n_embd).await?,
                post_norm: l.vector(&name("post_norm"), n_embd).await?,
            });
        }
        let activations = |label| scratch_buffer(&gpu, label, batch as u64 * all as u64 * 4);
        let embd = PerLayerEmbd {
            shape: per_layer_inputs::Shape {
                width,
                n_layer,
                eps,
                proj_scale: 1.0 / (n_embd as f32).sqrt(),
                input_scale: std::f32::consts::FRAC_1_SQRT_2,
            },
            table,
            model_proj: l.matrix("per_layer_model_proj.weight", n_embd, all).await?,
            proj_norm: l.vector("per_layer_proj_norm.weight", width).await?,
            rows,
            inputs: activations("per-layer inputs").await?,
            gated: scratch_buffer(&gpu, "per-layer gated", batch as u64 * width as u64 * 4).await?,
            layers,
        };
        Ok((embd, token_rows))
    }

    /// Every layer's input for the run's tokens, from `x`, their embeddings as scaled for the first
    /// layer.
    pub fn push_inputs(&self, plan: &mut Plan, x: &wgpu::Buffer) {
        if let Table::Gpu(table) = &self.table {
            let scale = (self.shape.width as f32).sqrt();
            embed::push_reading(plan, table, &self.rows, scale, PADDING_ROW);
        }
        matvec::push(plan, &self.model_proj, x, &self.inputs, false);
        per_layer_inputs::push(plan, self.shape, &self.inputs, &self.rows, &self.proj_norm);
    }

    /// Layer `i`'s part after its feed-forward block: `x = (x + rmsnorm(proj(gelu(inp_gate x) *
    /// input)) * post_norm) * scale`, then `xn = rmsnorm(x) * next_norm`. `t`: (batch, n_embd) scratch.
    pub fn push_layer(
        &self,
        plan: &mut Plan,
        i: usize,
        (x, scale): (&wgpu::Buffer, f32),
        t: &wgpu::Buffer,
        (next_norm, xn): (&wgpu::Buffer, &wgpu::Buffer),
    ) {
        let layer = &self.layers[i];
        let per_layer_inputs::Shape {
            width,
            n_layer,
            eps,
            ..
        } = self.shape;
        // GELU of the gate times this layer's slice of the inputs, in the gate's product.
        let input = (&self.inputs, i as u32 * width, n_layer * width);
        let gelu = Activation::GeluTanh;
        matvec::push_glu_with(plan, &layer.inp_gate, x.into(), gelu, input, &self.gated);
        matvec::push(plan, &layer.proj, &self.gated, t, false);
        let n_embd = layer.proj.rows;
        rms_norm::push_add_scale_norm(
            plan,
            (t, &layer.post_norm),
            (x, scale),
            (next_norm, xn),
            n_embd,
            eps,
        );
    }

    /// Whether the table stays off the GPU.
    pub fn off_gpu(&self) -> bool {
        matches!(self.table, Table::Host)
    }
}

//! The tokens a grammar allows next, for each row of logits a step samples from: a flag, then one bit
//! per token id. The greedy choice (shaders/argmax.wgsl) and the sampler's candidates
//! (shaders/top_k.wgsl) read only the allowed ids of a row whose flag is set, so a constrained step
//! reads back its choice or its candidates, not its row of logits. Written before each step.

use crate::gpu::{scratch_buffer, Gpu, GpuError};

pub struct Allowed {
    /// (rows, 1 + words) u32: each row's flag (0: every token), then its bits.
    pub buffer: wgpu::Buffer,
    /// u32s of one row's bits.
    pub words: u32,
}

impl Allowed {
    /// Room for `rows` rows over a vocabulary of `n_vocab`, every token allowed.
    pub async fn new(gpu: &Gpu, rows: u32, n_vocab: u32) -> Result<Allowed, GpuError> {
        let words = n_vocab.div_ceil(32);
        let bytes = rows as u64 * (1 + words as u64) * 4;
        let buffer = scratch_buffer(gpu, "allowed tokens", bytes).await?;
        Ok(Allowed { buffer, words })
    }

    /// Where row `row` starts, in u32s.
    pub fn row_at(&self, row: u32) -> u32 {
        row * (1 + self.words)
    }

    /// Sets row `row` to allow the ids whose bits `bits` sets (as many words as the row has), or
    /// every id.
    pub fn write(&self, gpu: &Gpu, row: u32, bits: Option<&[u32]>) {
        let at = self.row_at(row) as u64 * 4;
        match bits {
            Some(bits) => {
                assert_eq!(bits.len(), self.words as usize, "a row's bits");
                let row: Vec<u32> = [&[1u32][..], bits].concat();
                gpu.queue
                    .write_buffer(&self.buffer, at, bytemuck::cast_slice(&row));
            }
            None => gpu
                .queue
                .write_buffer(&self.buffer, at, &0u32.to_le_bytes()),
        }
    }
}

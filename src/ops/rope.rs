//! How a model rotates queries and keys (shaders/rope.wgsl): plain RoPE, linear scaling and YaRN, as
//! ggml computes the angles. Kernels that rotate take a `Rope` in their parameters and its pairs'
//! frequencies (`Rope::freqs_buffer`) in a buffer.

use crate::gpu::{storage_buffer, Gpu};

/// RoPE settings, from a model's metadata.
#[derive(Clone, Copy, Debug)]
pub struct Rope {
    /// Dimensions rotated, from the first of each head.
    pub n_rot: u32,
    pub freq_base: f32,
    /// 1 / the scaling factor.
    pub freq_scale: f32,
    /// NeoX ordering: rotate (i, i + n_rot/2) instead of (2i, 2i+1).
    pub neox: bool,
    pub yarn: Option<Yarn>,
    /// Interleaved multimodal RoPE's pairs on each axis (time, height, width, the fourth), where the
    /// model rotates so (Qwen3.5: rope.dimension_sections). Text tokens turn alike on every axis;
    /// an image's tokens turn by their row and column too (shaders/rope.wgsl's `rope_axis`).
    pub sections: Option<[u32; 4]>,
}

/// YaRN's extension of the context: a ramp between interpolated and original angles.
#[derive(Clone, Copy, Debug)]
pub struct Yarn {
    pub ext_factor: f32,
    /// The magnitude of (cos, sin) before YaRN's own growth.
    pub attn_factor: f32,
    /// The ramp runs over pairs corr_low..corr_high.
    pub corr_low: f32,
    pub corr_high: f32,
}

impl Yarn {
    /// ggml's ramp for a model trained on `n_ctx_orig` positions (beta_fast 32, beta_slow 1).
    pub fn new(n_rot: u32, freq_base: f32, n_ctx_orig: u32, attn_factor: f32) -> Yarn {
        let corr_dim = |n_rotations: f32| {
            n_rot as f32 * (n_ctx_orig as f32 / (n_rotations * 2.0 * std::f32::consts::PI)).ln()
                / (2.0 * freq_base.ln())
        };
        Yarn {
            ext_factor: 1.0,
            attn_factor,
            corr_low: corr_dim(32.0).floor().max(0.0),
            corr_high: corr_dim(1.0).ceil().min(n_rot as f32 - 1.0),
        }
    }
}

/// For a head of `head_dim` rows of which the first `n_rot` rotate in NeoX order (i with i + n_rot/2),
/// the order that puts each rotating pair side by side: row 2i takes row i, row 2i + 1 takes row
/// i + n_rot/2, the rows past n_rot stay. Rotating adjacent pairs of rows so reordered is NeoX's
/// rotation of the rows as they were.
pub fn neox_as_adjacent(head_dim: u32, n_rot: u32) -> Vec<u32> {
    let half = n_rot / 2;
    (0..half)
        .flat_map(|i| [i, i + half])
        .chain(n_rot..head_dim)
        .collect()
}

/// A buffer for each of `layers` (each layer's `Rope::freqs`), one buffer for those whose frequencies
/// agree (Gemma 3's local and global layers make two).
pub fn freqs_buffers(gpu: &Gpu, layers: impl Iterator<Item = Vec<f32>>) -> Vec<wgpu::Buffer> {
    let mut made: Vec<(Vec<f32>, wgpu::Buffer)> = Vec::new();
    layers
        .map(|freqs| {
            // A rotation of no dimensions (BERT's learned positions) binds one value it never reads:
            // a binding holds at least one.
            let freqs = match freqs.is_empty() {
                true => vec![0.0],
                false => freqs,
            };
            let at = match made.iter().position(|(known, _)| *known == freqs) {
                Some(at) => at,
                None => {
                    let buffer = storage_buffer(gpu, "rope freqs", bytemuck::cast_slice(&freqs));
                    made.push((freqs, buffer));
                    made.len() - 1
                }
            };
            made[at].1.clone()
        })
        .collect()
}

/// `Rope` as the shaders' `struct Rope` lays it out.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RopeParams {
    n_rot: u32,
    neox: u32,
    sections: u32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    corr_low: f32,
    corr_high: f32,
}

impl Rope {
    pub fn params(&self) -> RopeParams {
        let yarn = self.yarn.unwrap_or(Yarn {
            ext_factor: 0.0,
            attn_factor: 1.0,
            corr_low: 0.0,
            corr_high: 0.0,
        });
        RopeParams {
            n_rot: self.n_rot,
            neox: self.neox as u32,
            sections: self.sections.map_or(0, |s| {
                // Each fits a byte (the model's loading checks it).
                s.iter()
                    .rev()
                    .fold(0, |packed, &n| packed << 8 | n.min(255))
            }),
            freq_scale: self.freq_scale,
            ext_factor: yarn.ext_factor,
            attn_factor: yarn.attn_factor,
            corr_low: yarn.corr_low,
            corr_high: yarn.corr_high,
        }
    }

    /// Each pair's frequency, the angle it turns per position: freq_base^(-2i / n_rot) over the pair's
    /// divisor in `factors` (Llama 3's rope_freqs), where the model has them. The kernels read these
    /// rather than raise freq_base to a power per pair (see shaders/rope.wgsl).
    pub fn freqs(&self, factors: Option<&[f32]>) -> Vec<f32> {
        (0..(self.n_rot / 2) as usize)
            .map(|i| {
                let divisor = factors.map_or(1.0, |f| f[i] as f64);
                let freq = (self.freq_base as f64).powf(-2.0 * i as f64 / self.n_rot as f64);
                (freq / divisor) as f32
            })
            .collect()
    }

    /// The buffer of `freqs` the kernels that rotate by this RoPE bind.
    pub fn freqs_buffer(&self, gpu: &Gpu, factors: Option<&[f32]>) -> wgpu::Buffer {
        freqs_buffers(gpu, std::iter::once(self.freqs(factors))).remove(0)
    }

    /// CPU reference: rotates the first `n_rot` dimensions of one head in place at position `pos`.
    pub fn reference(&self, x: &mut [f32], pos: u32, factors: Option<&[f32]>) {
        for i in 0..(self.n_rot / 2) as usize {
            let (j0, j1) = if self.neox {
                (i, i + self.n_rot as usize / 2)
            } else {
                (2 * i, 2 * i + 1)
            };
            let divisor = factors.map_or(1.0, |f| f[i] as f64);
            let extrapolated = pos as f64
                * (self.freq_base as f64).powf(-2.0 * i as f64 / self.n_rot as f64)
                / divisor;
            let interpolated = self.freq_scale as f64 * extrapolated;
            let (mut theta, mut magnitude) = (interpolated, 1.0);
            if let Some(y) = self.yarn {
                magnitude = y.attn_factor as f64;
                if y.ext_factor != 0.0 {
                    let ramp = (i as f64 - y.corr_low as f64)
                        / (y.corr_high as f64 - y.corr_low as f64).max(0.001);
                    let mix = (1.0 - ramp.clamp(0.0, 1.0)) * y.ext_factor as f64;
                    theta = interpolated * (1.0 - mix) + extrapolated * mix;
                    magnitude *= 1.0 + 0.1 * (1.0 / self.freq_scale as f64).ln();
                }
            }
            let (s, c) = (
                (theta.sin() * magnitude) as f32,
                (theta.cos() * magnitude) as f32,
            );
            let (a, b) = (x[j0], x[j1]);
            x[j0] = a * c - b * s;
            x[j1] = a * s + b * c;
        }
    }
}

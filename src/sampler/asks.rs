//! What the sampler asks of a step's kernels, written before the step: the candidates to pick
//! (`Pick`: shaders/pick.wgsl, penalize.wgsl, top_k.wgsl), the choice among them (`Choose`:
//! shaders/choose.wgsl), or a draw from the whole row (`Draw`: shaders/draw.wgsl). The GPU reads
//! them as they are.

use super::logits::{penalize, ranked, Adjusted, Penalties};

/// The most candidates the GPU picks (a level's slots per slice).
pub const K_MAX: u32 = 64;
/// The most distinct tokens the bias and the penalties take on the GPU (shaders/pick.wgsl).
pub const PENALIZED_MAX: usize = 256;

/// What the sampler asks of one step (shaders/pick.wgsl), written before the step.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Pick {
    k: u32,
    n_penalized: u32,
    penalties: Penalties,
    _pad: [u32; 3],
    penalized: [u32; PENALIZED_MAX],
    counts: [u32; PENALIZED_MAX],
    biases: [f32; PENALIZED_MAX],
}

impl Pick {
    /// `k` candidates (at most K_MAX) after the bias and `penalties` on `adjusted` (distinct tokens,
    /// at most PENALIZED_MAX), as `sampler::penalize` applies them.
    pub fn new(k: u32, penalties: Penalties, adjusted: &[Adjusted]) -> Pick {
        assert!(k <= K_MAX && adjusted.len() <= PENALIZED_MAX);
        let mut pick = Pick {
            k,
            n_penalized: adjusted.len() as u32,
            penalties,
            _pad: [0; 3],
            penalized: [0; PENALIZED_MAX],
            counts: [0; PENALIZED_MAX],
            biases: [0.0; PENALIZED_MAX],
        };
        for (i, t) in adjusted.iter().enumerate() {
            pick.penalized[i] = t.token;
            pick.counts[i] = t.seen;
            pick.biases[i] = t.bias;
        }
        pick
    }

    /// No candidates and no penalty: what a pick buffer holds before a step writes one.
    pub fn none() -> Pick {
        Pick::new(0, Penalties::NONE, &[])
    }

    pub fn k(&self) -> u32 {
        self.k
    }

    /// The candidates it asks for, on the CPU: the sampler's own penalty and ranking over the whole
    /// row, cut at k (the GPU's kernels' reference).
    pub fn reference(&self, logits: &[f32]) -> Vec<(u32, f32)> {
        let mut logits = logits.to_vec();
        let n = self.n_penalized as usize;
        let adjusted: Vec<Adjusted> = (0..n)
            .map(|i| Adjusted {
                token: self.penalized[i],
                seen: self.counts[i],
                bias: self.biases[i],
            })
            .collect();
        penalize(&mut logits, &adjusted, self.penalties);
        let mut all = ranked(&logits);
        all.truncate(self.k as usize);
        all
    }
}

/// The sampler's choice among the candidates, as `Sampler::choose` makes it (shaders/choose.wgsl):
/// top-p, min-p, the temperature, and the draw `r` in [0, 1); the first candidate at temperature 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Choose {
    pub temperature: f32,
    pub top_p: f32,
    pub min_p: f32,
    pub r: f32,
    /// The candidates to choose among (the sampler's own k).
    pub k: u32,
}

/// What the sampler asks of one draw, written before the step.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Draw {
    pub temperature: f32,
    /// 0: no floor.
    pub min_p: f32,
    pub key: u32,
    /// 1: every token.
    pub top_p: f32,
}

impl Draw {
    pub fn new(temperature: f32, top_p: f32, min_p: f32, key: u32) -> Draw {
        assert!(temperature > 0.0, "a draw at a temperature above 0");
        Draw {
            temperature,
            min_p,
            key,
            top_p,
        }
    }
}

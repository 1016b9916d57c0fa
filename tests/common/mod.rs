//! What the integration tests share: the GPU (required in CI), seeded random data, error measures.
#![allow(dead_code)]

pub mod fidelity;

use std::sync::Arc;
use wick::gpu::Gpu;

/// The GPU, or None (with the reason printed) where there is none. In CI a missing adapter fails.
pub fn gpu() -> Option<Arc<Gpu>> {
    match pollster::block_on(Gpu::new()) {
        Ok(g) => Some(g),
        Err(e) if std::env::var("CI").is_err() => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("CI needs a GPU adapter (lavapipe): {e}"),
    }
}

/// The default model, which `scripts/fetch-model.sh` puts in models/.
pub fn model_path() -> std::path::PathBuf {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        p.exists(),
        "{} is missing: run scripts/fetch-model.sh",
        p.display()
    );
    p
}

/// xorshift64*: seeded, reproducible, no dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [-1, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    pub fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }
}

/// Normalized mean squared error of `got` against `want`.
pub fn nmse(got: &[f32], want: &[f32]) -> f64 {
    assert_eq!(got.len(), want.len());
    let err: f64 = got
        .iter()
        .zip(want)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum();
    let norm: f64 = want.iter().map(|b| (*b as f64).powi(2)).sum();
    err / norm.max(1e-30)
}

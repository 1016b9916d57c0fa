//! Q5_K: 256 weights as 5-bit integers in 8 sub-blocks of 32, each with a 6-bit scale and a 6-bit min:
//! w = d * sc[j] * q - dmin * m[j] (scales packed as in [`unpack_scale_min`]).
//!
//! Bits: the low 4 bits are packed as in Q4_K (weight l of each chunk of 64 in the low nibble of byte l, weight
//! l + 32 in its high nibble); the fifth bit of weight l of sub-block j is bit j of qh[l].

use super::kquant::{quantize_scale_min, unpack_scale_min, Search, QK_K};
use super::Block;
use crate::gguf::GgmlType;
use half::f16;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BlockQ5K {
    pub d: f16,
    pub dmin: f16,
    pub scales: [u8; 12],
    pub qh: [u8; 32],
    pub qs: [u8; 128],
}

const _: () = assert!(size_of::<BlockQ5K>() == 176);

/// llama.cpp's scale search for this type.
const SEARCH: Search = Search {
    nmax: 31,
    rmin: -0.5,
    rdelta: 0.1,
    nstep: 15,
};

impl Block for BlockQ5K {
    const TYPE: GgmlType = GgmlType::Q5_K;
    const LEN: usize = QK_K;

    fn dequantize(&self, out: &mut [f32]) {
        let (d, dmin) = (self.d.to_f32(), self.dmin.to_f32());
        for (j, out) in out.chunks_exact_mut(32).enumerate() {
            let (sc, m) = unpack_scale_min(&self.scales, j);
            let (d, m) = (d * sc as f32, dmin * m as f32);
            let (qs, shift) = (&self.qs[32 * (j / 2)..][..32], 4 * (j % 2));
            for ((o, &q), &h) in out.iter_mut().zip(qs).zip(&self.qh) {
                let q = ((q >> shift) & 0xf) | ((h >> j) & 1) << 4;
                *o = d * q as f32 - m;
            }
        }
    }

    fn quantize(x: &[f32]) -> BlockQ5K {
        // (llama.cpp's quantize_row_q5_K_ref.)
        let b = quantize_scale_min(x, &SEARCH);
        let qs = std::array::from_fn(|i| {
            let (chunk, l) = (i / 32, i % 32);
            (b.q[64 * chunk + l] & 0xf) | (b.q[64 * chunk + l + 32] & 0xf) << 4
        });
        let qh = std::array::from_fn(|l| (0..8).fold(0u8, |h, j| h | (b.q[32 * j + l] >> 4) << j));
        BlockQ5K {
            d: b.d,
            dmin: b.dmin,
            scales: b.scales,
            qh,
            qs,
        }
    }
}

//! Q4_K: 256 weights as 4-bit integers in 8 sub-blocks of 32, each with a 6-bit scale and a 6-bit min:
//! w = d * sc[j] * q - dmin * m[j] (scales packed as in [`unpack_scale_min`]).
//!
//! Bits: each chunk of 64 weights has 32 bytes of `qs`; weight l of the chunk is the low nibble of byte l and
//! weight l + 32 its high nibble.

use super::kquant::{quantize_scale_min, unpack_scale_min, Search, QK_K};
use super::Block;
use crate::gguf::GgmlType;
use half::f16;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BlockQ4K {
    pub d: f16,
    pub dmin: f16,
    pub scales: [u8; 12],
    pub qs: [u8; 128],
}

const _: () = assert!(size_of::<BlockQ4K>() == 144);

/// llama.cpp's scale search for this type.
const SEARCH: Search = Search {
    nmax: 15,
    rmin: -1.0,
    rdelta: 0.1,
    nstep: 20,
};

impl Block for BlockQ4K {
    const TYPE: GgmlType = GgmlType::Q4_K;
    const LEN: usize = QK_K;

    fn dequantize(&self, out: &mut [f32]) {
        let (d, dmin) = (self.d.to_f32(), self.dmin.to_f32());
        for (j, out) in out.chunks_exact_mut(32).enumerate() {
            let (sc, m) = unpack_scale_min(&self.scales, j);
            let (d, m) = (d * sc as f32, dmin * m as f32);
            let (qs, shift) = (&self.qs[32 * (j / 2)..][..32], 4 * (j % 2));
            for (o, &q) in out.iter_mut().zip(qs) {
                *o = d * ((q >> shift) & 0xf) as f32 - m;
            }
        }
    }

    fn quantize(x: &[f32]) -> BlockQ4K {
        // (llama.cpp's quantize_row_q4_K_ref.)
        let b = quantize_scale_min(x, &SEARCH);
        let qs = std::array::from_fn(|i| {
            let (chunk, l) = (i / 32, i % 32);
            b.q[64 * chunk + l] | b.q[64 * chunk + l + 32] << 4
        });
        BlockQ4K {
            d: b.d,
            dmin: b.dmin,
            scales: b.scales,
            qs,
        }
    }
}

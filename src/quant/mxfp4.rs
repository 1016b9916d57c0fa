//! MXFP4 (OCP microscaling): 32 weights as 4-bit E2M1 floats sharing one E8M0 exponent. Byte j of `qs`
//! holds weight j in its low nibble and weight j + 16 in its high nibble, as in Q4_0. A code's low three
//! bits are the magnitude, doubled so that they are integers (0, 1, 2, 3, 4, 6, 8, 12), its high bit
//! the sign; w = code value * 2^(e - 128), the halving undoing the doubling.
//!
//! Quantization is llama.cpp's reference: e = floor(log2(max |w|)) - 2 + 127, so the largest weight
//! lands on 4 to 8 (doubled), and each weight takes the nearest code (the lowest on a tie). Weights
//! of more than 1.5 times the block's power of two are clipped to 12: the format's own range.

use super::Block;
use crate::gguf::GgmlType;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BlockMxfp4 {
    pub e: u8,
    pub qs: [u8; 16],
}

const _: () = assert!(size_of::<BlockMxfp4>() == 17);

/// The E2M1 codes' values, doubled: codes 8-15 are the negatives of 0-7.
pub const E2M1_DOUBLED: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// 2^(e - 128): half the E8M0 value, built from its bits as llama.cpp does (e of 0 and 1 are f32
/// subnormals).
pub fn e8m0_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        (e as u32 - 1) << 23
    };
    f32::from_bits(bits)
}

impl Block for BlockMxfp4 {
    const TYPE: GgmlType = GgmlType::MXFP4;
    const LEN: usize = 32;

    fn dequantize(&self, out: &mut [f32]) {
        let d = e8m0_half(self.e);
        for (j, &q) in self.qs.iter().enumerate() {
            out[j] = E2M1_DOUBLED[(q & 0xf) as usize] as f32 * d;
            out[j + 16] = E2M1_DOUBLED[(q >> 4) as usize] as f32 * d;
        }
    }

    fn quantize(x: &[f32]) -> BlockMxfp4 {
        let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
        // llama.cpp converts the float to u8 unchecked; blocks below 2^-125 or above 2^128 (no f32
        // reaches it) would wrap there. They clamp here, to the smallest or largest exponent.
        let e = if amax > 0.0 {
            (amax.log2().floor() - 2.0 + 127.0).clamp(0.0, 255.0) as u8
        } else {
            0
        };
        let d = e8m0_half(e);
        let nearest = |v: f32| -> u8 {
            let err = |i: usize| (E2M1_DOUBLED[i] as f32 * d - v).abs();
            // The first code with the least error, as llama.cpp's best_index_mxfp4 (strictly less).
            (1..16).fold(0, |best, i| if err(i) < err(best) { i } else { best }) as u8
        };
        BlockMxfp4 {
            e,
            qs: std::array::from_fn(|j| nearest(x[j]) | nearest(x[j + 16]) << 4),
        }
    }
}

//! Q6_K: 256 weights as 6-bit integers in 16 sub-blocks of 16, each with a signed 8-bit scale:
//! w = d * scales[k] * (q - 32).
//!
//! Bits: each half of 128 weights has 64 bytes of `ql` and 32 of `qh`. For l in 0..32, weights l, l + 32, l + 64,
//! l + 96 of the half take their low 4 bits from ql[l] (low nibble), ql[l + 32] (low), ql[l] (high), ql[l + 32]
//! (high), and their top 2 bits from qh[l] bits 0-1, 2-3, 4-5, 6-7.

use super::kquant::{make_qx_quants, QK_K};
use super::{nearest_int, Block};
use crate::gguf::GgmlType;
use half::f16;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BlockQ6K {
    pub ql: [u8; 128],
    pub qh: [u8; 64],
    pub scales: [i8; 16],
    pub d: f16,
}

const _: () = assert!(size_of::<BlockQ6K>() == 210);

/// Where weight i's bits sit: (byte of `ql`, shift of its nibble, byte of `qh`, shift of its 2 bits).
fn bit_position(i: usize) -> (usize, u32, usize, u32) {
    let (half, k) = (i / 128, i % 128);
    let (quarter, l) = (k / 32, k % 32);
    let ql = 64 * half + l + 32 * (quarter & 1);
    (
        ql,
        4 * (quarter as u32 / 2),
        32 * half + l,
        2 * quarter as u32,
    )
}

impl BlockQ6K {
    /// The integer (0..64) of weight i.
    fn q(&self, i: usize) -> u8 {
        let (ql, ql_shift, qh, qh_shift) = bit_position(i);
        (self.ql[ql] >> ql_shift) & 0xf | ((self.qh[qh] >> qh_shift) & 3) << 4
    }
}

impl Block for BlockQ6K {
    const TYPE: GgmlType = GgmlType::Q6_K;
    const LEN: usize = QK_K;

    fn dequantize(&self, out: &mut [f32]) {
        let d = self.d.to_f32();
        for (i, o) in out.iter_mut().enumerate() {
            *o = d * self.scales[i / 16] as f32 * (self.q(i) as i32 - 32) as f32;
        }
    }

    fn quantize(x: &[f32]) -> BlockQ6K {
        // (llama.cpp's quantize_row_q6_K_ref.) A scale per sub-block of 16, from the search.
        let mut q = [0i8; QK_K];
        let mut scales = [0f32; 16];
        let (mut max_scale, mut max_abs_scale) = (0.0f32, 0.0f32);
        for (k, s) in scales.iter_mut().enumerate() {
            *s = make_qx_quants(32, &x[16 * k..16 * k + 16], &mut q[16 * k..16 * k + 16]);
            if s.abs() > max_abs_scale {
                max_abs_scale = s.abs();
                max_scale = *s;
            }
        }
        if max_abs_scale < 1e-15 {
            return bytemuck::Zeroable::zeroed();
        }

        // The sub-block scales as signed bytes against the largest: that one maps to -128.
        let iscale = -128.0 / max_scale;
        let d = f16::from_f32(1.0 / iscale);
        let block_scales: [i8; 16] =
            std::array::from_fn(|k| nearest_int(iscale * scales[k]).min(127) as i8);

        // Requantize against the scales as stored; a sub-block whose scale rounded to 0 keeps the search's integers.
        for (k, &sc) in block_scales.iter().enumerate() {
            let dk = d.to_f32() * sc as f32;
            if dk == 0.0 {
                continue;
            }
            for i in 16 * k..16 * k + 16 {
                q[i] = (nearest_int(x[i] / dk).clamp(-32, 31) + 32) as i8;
            }
        }

        let mut block = BlockQ6K {
            ql: [0; 128],
            qh: [0; 64],
            scales: block_scales,
            d,
        };
        for (i, &qi) in q.iter().enumerate() {
            let (ql, ql_shift, qh, qh_shift) = bit_position(i);
            block.ql[ql] |= (qi as u8 & 0xf) << ql_shift;
            block.qh[qh] |= (qi as u8 >> 4) << qh_shift;
        }
        block
    }
}

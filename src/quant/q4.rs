//! Q4_0 and Q4_1: 32 weights as 4-bit integers. Byte j of `qs` holds weight j in its low nibble and weight j + 16
//! in its high nibble.
//! Q4_0: w = d * (q - 8), d chosen so that the weight of largest magnitude maps to -8.
//! Q4_1: w = d * q + m, spanning the block's [min, max].

use super::{inverse, min_max, signed_absmax, Block};
use crate::gguf::GgmlType;
use half::f16;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BlockQ4_0 {
    pub d: f16,
    pub qs: [u8; 16],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BlockQ4_1 {
    pub d: f16,
    pub m: f16,
    pub qs: [u8; 16],
}

const _: () = assert!(size_of::<BlockQ4_0>() == 18 && size_of::<BlockQ4_1>() == 20);

impl Block for BlockQ4_0 {
    const TYPE: GgmlType = GgmlType::Q4_0;
    const LEN: usize = 32;

    fn dequantize(&self, out: &mut [f32]) {
        let d = self.d.to_f32();
        for (j, &q) in self.qs.iter().enumerate() {
            out[j] = ((q & 0xf) as i32 - 8) as f32 * d;
            out[j + 16] = ((q >> 4) as i32 - 8) as f32 * d;
        }
    }

    fn quantize(x: &[f32]) -> BlockQ4_0 {
        let d = signed_absmax(x) / -8.0;
        let id = inverse(d);
        // Truncating x * id + 8.5 rounds to nearest within [0, 16]; 16 (only the extreme weight) is clamped.
        let q = |v: f32| ((v * id + 8.5) as i8).min(15) as u8;
        let qs = std::array::from_fn(|j| q(x[j]) | q(x[j + 16]) << 4);
        BlockQ4_0 {
            d: f16::from_f32(d),
            qs,
        }
    }
}

impl Block for BlockQ4_1 {
    const TYPE: GgmlType = GgmlType::Q4_1;
    const LEN: usize = 32;

    fn dequantize(&self, out: &mut [f32]) {
        let (d, m) = (self.d.to_f32(), self.m.to_f32());
        for (j, &q) in self.qs.iter().enumerate() {
            out[j] = (q & 0xf) as f32 * d + m;
            out[j + 16] = (q >> 4) as f32 * d + m;
        }
    }

    fn quantize(x: &[f32]) -> BlockQ4_1 {
        let (min, max) = min_max(x);
        let d = (max - min) / 15.0;
        let id = inverse(d);
        let q = |v: f32| (((v - min) * id + 0.5) as i8).min(15) as u8;
        let qs = std::array::from_fn(|j| q(x[j]) | q(x[j + 16]) << 4);
        BlockQ4_1 {
            d: f16::from_f32(d),
            m: f16::from_f32(min),
            qs,
        }
    }
}

//! Q5_0 and Q5_1: 32 weights as 5-bit integers. The low 4 bits are packed as in Q4 (weight j in the low nibble of
//! byte j, weight j + 16 in its high nibble); bit j of the little-endian u32 `qh` is weight j's fifth bit.
//! Q5_0: w = d * (q - 16), d chosen so that the weight of largest magnitude maps to -16.
//! Q5_1: w = d * q + m, spanning the block's [min, max].

use super::{inverse, min_max, signed_absmax, Block};
use crate::gguf::GgmlType;
use half::f16;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BlockQ5_0 {
    pub d: f16,
    pub qh: [u8; 4],
    pub qs: [u8; 16],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BlockQ5_1 {
    pub d: f16,
    pub m: f16,
    pub qh: [u8; 4],
    pub qs: [u8; 16],
}

const _: () = assert!(size_of::<BlockQ5_0>() == 22 && size_of::<BlockQ5_1>() == 24);

/// The 32 5-bit integers of a block, in weight order.
fn unpack(qh: [u8; 4], qs: &[u8; 16]) -> [u8; 32] {
    let qh = u32::from_le_bytes(qh);
    std::array::from_fn(|j| {
        let nibble = if j < 16 { qs[j] & 0xf } else { qs[j - 16] >> 4 };
        nibble | (((qh >> j) & 1) as u8) << 4
    })
}

/// Packs 32 5-bit integers into (`qh`, `qs`).
fn pack(q: [u8; 32]) -> ([u8; 4], [u8; 16]) {
    let qh = (0..32).fold(0u32, |h, j| h | (((q[j] >> 4) & 1) as u32) << j);
    let qs = std::array::from_fn(|j| (q[j] & 0xf) | (q[j + 16] & 0xf) << 4);
    (qh.to_le_bytes(), qs)
}

impl Block for BlockQ5_0 {
    const TYPE: GgmlType = GgmlType::Q5_0;
    const LEN: usize = 32;

    fn dequantize(&self, out: &mut [f32]) {
        let d = self.d.to_f32();
        for (o, q) in out.iter_mut().zip(unpack(self.qh, &self.qs)) {
            *o = (q as i32 - 16) as f32 * d;
        }
    }

    fn quantize(x: &[f32]) -> BlockQ5_0 {
        let d = signed_absmax(x) / -16.0;
        let id = inverse(d);
        let (qh, qs) = pack(std::array::from_fn(|j| {
            ((x[j] * id + 16.5) as i8).min(31) as u8
        }));
        BlockQ5_0 {
            d: f16::from_f32(d),
            qh,
            qs,
        }
    }
}

impl Block for BlockQ5_1 {
    const TYPE: GgmlType = GgmlType::Q5_1;
    const LEN: usize = 32;

    fn dequantize(&self, out: &mut [f32]) {
        let (d, m) = (self.d.to_f32(), self.m.to_f32());
        for (o, q) in out.iter_mut().zip(unpack(self.qh, &self.qs)) {
            *o = q as f32 * d + m;
        }
    }

    fn quantize(x: &[f32]) -> BlockQ5_1 {
        let (min, max) = min_max(x);
        let d = (max - min) / 31.0;
        let id = inverse(d);
        let (qh, qs) = pack(std::array::from_fn(|j| {
            (((x[j] - min) * id + 0.5) as u8).min(31)
        }));
        BlockQ5_1 {
            d: f16::from_f32(d),
            m: f16::from_f32(min),
            qh,
            qs,
        }
    }
}

//! Q8_0: 32 weights as signed bytes times one f16 scale: w = d * q.

use super::{inverse, Block};
use crate::gguf::GgmlType;
use half::f16;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BlockQ8_0 {
    pub d: f16,
    pub qs: [i8; 32],
}

const _: () = assert!(size_of::<BlockQ8_0>() == 34);

impl Block for BlockQ8_0 {
    const TYPE: GgmlType = GgmlType::Q8_0;
    const LEN: usize = 32;

    fn dequantize(&self, out: &mut [f32]) {
        let d = self.d.to_f32();
        for (o, &q) in out.iter_mut().zip(&self.qs) {
            *o = q as f32 * d;
        }
    }

    fn quantize(x: &[f32]) -> BlockQ8_0 {
        let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = inverse(d);
        // Rounding half away from zero, as C's roundf.
        let qs = std::array::from_fn(|j| (x[j] * id).round() as i8);
        BlockQ8_0 {
            d: f16::from_f32(d),
            qs,
        }
    }
}

//! F32, F16 and BF16: blocks of one weight. Conversions round to nearest, ties to even, as ggml's do; BF16 keeps a
//! NaN a (quiet) NaN.

use super::Block;
use crate::gguf::GgmlType;
use half::{bf16, f16};

impl Block for f32 {
    const TYPE: GgmlType = GgmlType::F32;
    const LEN: usize = 1;

    fn dequantize(&self, out: &mut [f32]) {
        out[0] = *self;
    }

    fn quantize(x: &[f32]) -> f32 {
        x[0]
    }
}

impl Block for f16 {
    const TYPE: GgmlType = GgmlType::F16;
    const LEN: usize = 1;

    fn dequantize(&self, out: &mut [f32]) {
        out[0] = self.to_f32();
    }

    fn quantize(x: &[f32]) -> f16 {
        f16::from_f32(x[0])
    }
}

impl Block for bf16 {
    const TYPE: GgmlType = GgmlType::BF16;
    const LEN: usize = 1;

    fn dequantize(&self, out: &mut [f32]) {
        out[0] = self.to_f32();
    }

    fn quantize(x: &[f32]) -> bf16 {
        bf16::from_f32(x[0])
    }
}

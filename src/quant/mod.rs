//! The CPU side of every tensor type: a block struct in GGUF's exact byte layout, its dequantization, and its
//! quantization as llama.cpp's reference (non-imatrix) quantizers do it, so that a file Wick writes holds the bytes
//! llama.cpp would have written.
//!
//! Each type is a [`Block`]: `LEN` weights stored in `size_of::<Self>()` bytes. [`dequantize`] and [`quantize`]
//! dispatch on a [`GgmlType`] to the block that implements it; everything else is generic.

mod float;
mod kquant;
mod mxfp4;
mod q4;
mod q4_k;
mod q5;
mod q5_k;
mod q6_k;
mod q8_0;

pub use mxfp4::{e8m0_half, BlockMxfp4, E2M1_DOUBLED};
pub use q4::{BlockQ4_0, BlockQ4_1};
pub use q4_k::BlockQ4K;
pub use q5::{BlockQ5_0, BlockQ5_1};
pub use q5_k::BlockQ5K;
pub use q6_k::BlockQ6K;
pub use q8_0::BlockQ8_0;

use crate::gguf::GgmlType;
use half::{bf16, f16};

/// One block of a tensor type, laid out byte for byte as in a GGUF file.
pub trait Block: bytemuck::Pod {
    const TYPE: GgmlType;
    /// Weights per block.
    const LEN: usize;

    /// Writes the block's `LEN` weights to `out` (`out.len() == LEN`).
    fn dequantize(&self, out: &mut [f32]);

    /// Quantizes `LEN` weights (`x.len() == LEN`).
    fn quantize(x: &[f32]) -> Self;
}

/// Why a buffer could not be (de)quantized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantError {
    #[error("{n} weights are not a whole number of {ty} blocks ({block_len} weights each)")]
    PartialBlock {
        ty: GgmlType,
        n: usize,
        block_len: usize,
    },
    #[error("{ty}: {n} weights take {expected} bytes, but {got} were given")]
    WrongByteCount {
        ty: GgmlType,
        n: usize,
        expected: usize,
        got: usize,
    },
}

/// Dequantizes `src`, exactly `ty.bytes_for(dst.len())` bytes of `ty` blocks, into `dst`.
pub fn dequantize(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Result<(), QuantError> {
    let expected = byte_len(ty, dst.len())?;
    if src.len() != expected {
        return Err(QuantError::WrongByteCount {
            ty,
            n: dst.len(),
            expected,
            got: src.len(),
        });
    }
    match ty {
        GgmlType::F32 => dequantize_blocks::<f32>(src, dst),
        GgmlType::F16 => dequantize_blocks::<f16>(src, dst),
        GgmlType::BF16 => dequantize_blocks::<bf16>(src, dst),
        GgmlType::Q8_0 => dequantize_blocks::<BlockQ8_0>(src, dst),
        GgmlType::Q4_0 => dequantize_blocks::<BlockQ4_0>(src, dst),
        GgmlType::Q4_1 => dequantize_blocks::<BlockQ4_1>(src, dst),
        GgmlType::Q5_0 => dequantize_blocks::<BlockQ5_0>(src, dst),
        GgmlType::Q5_1 => dequantize_blocks::<BlockQ5_1>(src, dst),
        GgmlType::Q4_K => dequantize_blocks::<BlockQ4K>(src, dst),
        GgmlType::Q5_K => dequantize_blocks::<BlockQ5K>(src, dst),
        GgmlType::Q6_K => dequantize_blocks::<BlockQ6K>(src, dst),
        GgmlType::MXFP4 => dequantize_blocks::<BlockMxfp4>(src, dst),
    }
    Ok(())
}

/// Quantizes `src` (a whole number of `ty` blocks) and appends the blocks' bytes to `dst`.
pub fn quantize(ty: GgmlType, src: &[f32], dst: &mut Vec<u8>) -> Result<(), QuantError> {
    dst.reserve(byte_len(ty, src.len())?);
    match ty {
        GgmlType::F32 => quantize_blocks::<f32>(src, dst),
        GgmlType::F16 => quantize_blocks::<f16>(src, dst),
        GgmlType::BF16 => quantize_blocks::<bf16>(src, dst),
        GgmlType::Q8_0 => quantize_blocks::<BlockQ8_0>(src, dst),
        GgmlType::Q4_0 => quantize_blocks::<BlockQ4_0>(src, dst),
        GgmlType::Q4_1 => quantize_blocks::<BlockQ4_1>(src, dst),
        GgmlType::Q5_0 => quantize_blocks::<BlockQ5_0>(src, dst),
        GgmlType::Q5_1 => quantize_blocks::<BlockQ5_1>(src, dst),
        GgmlType::Q4_K => quantize_blocks::<BlockQ4K>(src, dst),
        GgmlType::Q5_K => quantize_blocks::<BlockQ5K>(src, dst),
        GgmlType::Q6_K => quantize_blocks::<BlockQ6K>(src, dst),
        GgmlType::MXFP4 => quantize_blocks::<BlockMxfp4>(src, dst),
    }
    Ok(())
}

fn byte_len(ty: GgmlType, n: usize) -> Result<usize, QuantError> {
    let block_len = ty.block_len();
    if !n.is_multiple_of(block_len) {
        return Err(QuantError::PartialBlock { ty, n, block_len });
    }
    Ok(n / block_len * ty.block_bytes())
}

fn dequantize_blocks<B: Block>(src: &[u8], dst: &mut [f32]) {
    // Blocks are read unaligned: a tensor's bytes sit anywhere in a buffer, and a block's f16 wants 2-byte alignment.
    for (bytes, out) in src
        .chunks_exact(size_of::<B>())
        .zip(dst.chunks_exact_mut(B::LEN))
    {
        bytemuck::pod_read_unaligned::<B>(bytes).dequantize(out);
    }
}

fn quantize_blocks<B: Block>(src: &[f32], dst: &mut Vec<u8>) {
    for x in src.chunks_exact(B::LEN) {
        dst.extend_from_slice(bytemuck::bytes_of(&B::quantize(x)));
    }
}

/// Rounds to the nearest integer, ties to even, as ggml's `nearest_int` does (by adding 1.5 * 2^23 and reading
/// the mantissa). Valid for |x| < 2^22; other inputs give some integer, never a panic.
fn nearest_int(x: f32) -> i32 {
    let bits = (x + 12582912.0).to_bits() as i32;
    (bits & 0x007f_ffff) - 0x0040_0000
}

/// The value of a signed weight of largest magnitude (the first one, on ties), or 0 for an empty slice.
fn signed_absmax(x: &[f32]) -> f32 {
    let (mut amax, mut max) = (0.0f32, 0.0f32);
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    max
}

/// The smallest and largest weight.
fn min_max(x: &[f32]) -> (f32, f32) {
    x.iter().fold((f32::MAX, -f32::MAX), |(lo, hi), &v| {
        (if v < lo { v } else { lo }, if v > hi { v } else { hi })
    })
}

/// `1 / d`, or 0 where `d` is 0 (an all-zero block).
fn inverse(d: f32) -> f32 {
    if d != 0.0 {
        1.0 / d
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_layout<B: Block>() {
        assert_eq!(size_of::<B>(), B::TYPE.block_bytes(), "{}", B::TYPE);
        assert_eq!(B::LEN, B::TYPE.block_len(), "{}", B::TYPE);
    }

    #[test]
    fn block_structs_match_the_type_table() {
        check_layout::<f32>();
        check_layout::<f16>();
        check_layout::<bf16>();
        check_layout::<BlockQ8_0>();
        check_layout::<BlockQ4_0>();
        check_layout::<BlockQ4_1>();
        check_layout::<BlockQ5_0>();
        check_layout::<BlockQ5_1>();
        check_layout::<BlockQ4K>();
        check_layout::<BlockQ5K>();
        check_layout::<BlockQ6K>();
        check_layout::<BlockMxfp4>();
    }

    #[test]
    fn nearest_int_rounds_ties_to_even() {
        let cases = [
            (0.5, 0),
            (1.5, 2),
            (2.5, 2),
            (-0.5, 0),
            (-1.5, -2),
            (2.49, 2),
            (-7.6, -8),
            (31.0, 31),
        ];
        for (x, want) in cases {
            assert_eq!(nearest_int(x), want, "{x}");
        }
    }

    #[test]
    fn scale_min_packing_round_trips_every_6_bit_value() {
        for v in 0..64u8 {
            let ls: [u8; 8] = std::array::from_fn(|j| (v + 7 * j as u8) % 64);
            let lm: [u8; 8] = std::array::from_fn(|j| (v + 13 * j as u8 + 1) % 64);
            let packed = kquant::pack_scale_min(&ls, &lm);
            for j in 0..8 {
                assert_eq!(kquant::unpack_scale_min(&packed, j), (ls[j], lm[j]));
            }
        }
    }
}

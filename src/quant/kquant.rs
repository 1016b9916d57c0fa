//! What the K types share: super-blocks of 256 weights in sub-blocks with their own scales, the searches that pick
//! those scales (llama.cpp's `make_qkx2_quants` and `make_qx_quants`), and the 6-bit packing of Q4_K/Q5_K scales.
//!
//! The arithmetic follows llama.cpp's reference quantizers operation for operation, in f32 and in the same order,
//! so that the quantized bytes come out identical.

use super::nearest_int;
use half::f16;

pub const QK_K: usize = 256;

/// Q4_K and Q5_K: eight sub-blocks of 32, each with a 6-bit scale and a 6-bit min, packed into 12 bytes:
/// bytes 0-3 hold scales 0-3 (low 6 bits) and the top 2 bits of scales 4-7; bytes 4-7 the same for the mins;
/// bytes 8-11 the low 4 bits of scale 4-7 (low nibble) and of min 4-7 (high nibble).
pub fn unpack_scale_min(scales: &[u8; 12], j: usize) -> (u8, u8) {
    if j < 4 {
        (scales[j] & 63, scales[j + 4] & 63)
    } else {
        let sc = (scales[j + 4] & 0xf) | (scales[j - 4] >> 6) << 4;
        let m = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4;
        (sc, m)
    }
}

pub fn pack_scale_min(ls: &[u8; 8], lm: &[u8; 8]) -> [u8; 12] {
    let mut s = [0u8; 12];
    for j in 0..8 {
        if j < 4 {
            s[j] = ls[j];
            s[j + 4] = lm[j];
        } else {
            s[j + 4] = (ls[j] & 0xf) | (lm[j] & 0xf) << 4;
            s[j - 4] |= (ls[j] >> 4) << 6;
            s[j] |= (lm[j] >> 4) << 6;
        }
    }
    s
}

/// A Q4_K/Q5_K super-block before its bits are packed: w = d * sc[j] * q - dmin * m[j] in sub-block j.
pub struct ScaleMinBlock {
    pub d: f16,
    pub dmin: f16,
    pub scales: [u8; 12],
    /// The integers, 0..=nmax, in weight order.
    pub q: [u8; QK_K],
}

/// How a Q4_K/Q5_K sub-block's scale is searched: integers 0..=nmax, and trial scales
/// (nmax + rmin + rdelta * i) / (max - min) for i in 0..=nstep.
#[derive(Clone, Copy)]
pub struct Search {
    pub nmax: i32,
    pub rmin: f32,
    pub rdelta: f32,
    pub nstep: i32,
}

/// Quantizes 256 weights to integers 0..=nmax with per-sub-block scales and mins (llama.cpp's
/// `quantize_row_q4_K_ref`/`quantize_row_q5_K_ref` minus the bit packing).
pub fn quantize_scale_min(x: &[f32], search: &Search) -> ScaleMinBlock {
    let nmax = search.nmax;
    let mut q = [0u8; QK_K];
    let mut scales = [0f32; 8];
    let mut mins = [0f32; 8];
    for j in 0..8 {
        let xs = &x[32 * j..32 * j + 32];
        // Weights favour large values, plus the sub-block's RMS so that small values still count.
        let sum_x2 = xs.iter().fold(0.0f32, |s, &v| s + v * v);
        let av_x = (sum_x2 / 32.0).sqrt();
        let weights: [f32; 32] = std::array::from_fn(|l| av_x + xs[l].abs());
        let (scale, min) = make_qkx2_quants(xs, &weights, &mut q[32 * j..32 * j + 32], search);
        scales[j] = scale;
        mins[j] = min;
    }
    let (max_scale, max_min) = (largest_above_zero(&scales), largest_above_zero(&mins));

    // The sub-block scales and mins, themselves quantized to 6 bits against the largest of each.
    let inv_scale = if max_scale > 0.0 {
        63.0 / max_scale
    } else {
        0.0
    };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    let ls: [u8; 8] = std::array::from_fn(|j| (nearest_int(inv_scale * scales[j]) as u8).min(63));
    let lm: [u8; 8] = std::array::from_fn(|j| (nearest_int(inv_min * mins[j]) as u8).min(63));
    let block_scales = pack_scale_min(&ls, &lm);
    let d = f16::from_f32(max_scale / 63.0);
    let dmin = f16::from_f32(max_min / 63.0);

    // Requantize against the scales as stored; a sub-block whose scale rounded to 0 keeps the search's integers.
    for j in 0..8 {
        let (sc, m) = unpack_scale_min(&block_scales, j);
        let d = d.to_f32() * sc as f32;
        if d == 0.0 {
            continue;
        }
        let dm = dmin.to_f32() * m as f32;
        for i in 32 * j..32 * j + 32 {
            q[i] = nearest_int((x[i] + dm) / d).clamp(0, nmax) as u8;
        }
    }
    ScaleMinBlock {
        d,
        dmin,
        scales: block_scales,
        q,
    }
}

/// The largest value, or 0 if none is above 0 (compared as llama.cpp does: -0.0 and NaN never win).
fn largest_above_zero(v: &[f32]) -> f32 {
    v.iter().fold(0.0, |m, &s| if s > m { s } else { m })
}

/// Fits x ≈ scale * l - min with integers l in 0..=nmax (written to `l_out`) and min >= 0, minimizing the weighted
/// squared error: a first guess from the range, then the trial scales of `search`, each refined by least squares.
/// Returns (scale, min).
fn make_qkx2_quants(x: &[f32], weights: &[f32], l_out: &mut [u8], search: &Search) -> (f32, f32) {
    let Search {
        nmax,
        rmin,
        rdelta,
        nstep,
    } = *search;
    let n = x.len();
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..n {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        l_out.fill(0);
        return (0.0, -min);
    }
    let quant =
        |iscale: f32, min: f32, v: f32| nearest_int(iscale * (v - min)).clamp(0, nmax) as u8;
    let mut iscale = nmax as f32 / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0.0f32;
    for i in 0..n {
        l_out[i] = quant(iscale, min, x[i]);
        let diff = scale * l_out[i] as f32 + min - x[i];
        best_error += weights[i] * (diff * diff);
    }
    if nstep < 1 {
        return (scale, -min);
    }
    let mut laux = [0u8; 32];
    let laux = &mut laux[..n];
    for is in 0..=nstep {
        iscale = (rmin + rdelta * is as f32 + nmax as f32) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0.0f32, 0.0f32, 0.0f32);
        for i in 0..n {
            laux[i] = quant(iscale, min, x[i]);
            let (w, l) = (weights[i], laux[i] as f32);
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        let det = sum_w * sum_l2 - sum_l * sum_l;
        if det > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0.0f32;
            for i in 0..n {
                let diff = this_scale * laux[i] as f32 + this_min - x[i];
                cur_error += weights[i] * (diff * diff);
            }
            if cur_error < best_error {
                l_out.copy_from_slice(laux);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

/// Fits x ≈ scale * l with signed integers l in -nmax..nmax (written to `l_out` offset by nmax, so 0..2*nmax),
/// weighting each error by x²: the scale that maps the largest magnitude to -nmax, then 18 nearby trial scales,
/// each refined by least squares. Returns the scale (0 for an all-zero input).
pub fn make_qx_quants(nmax: i32, x: &[f32], l_out: &mut [i8]) -> f32 {
    let max = super::signed_absmax(x);
    if max.abs() < 1e-15 {
        l_out.fill(0);
        return 0.0;
    }
    let quant = |iscale: f32, v: f32| nearest_int(iscale * v).clamp(-nmax, nmax - 1);
    // Sums over the trial integers: (Σ w·x·l, Σ w·l²) with w = x².
    let sums = |iscale: f32| {
        x.iter().fold((0.0f32, 0.0f32), |(slx, sl2), &v| {
            let (w, l) = (v * v, quant(iscale, v) as f32);
            (slx + w * v * l, sl2 + w * l * l)
        })
    };
    let store = |iscale: f32, l_out: &mut [i8]| {
        for (o, &v) in l_out.iter_mut().zip(x) {
            *o = (nmax + quant(iscale, v)) as i8;
        }
    };
    let iscale = -(nmax as f32) / max;
    store(iscale, l_out);
    let (sumlx, suml2) = sums(iscale);
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        let iscale = -(nmax as f32 + 0.1 * is as f32) / max;
        let (sumlx, suml2) = sums(iscale);
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            store(iscale, l_out);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

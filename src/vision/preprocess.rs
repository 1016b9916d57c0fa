//! An image made ready for a vision encoder as llama.cpp's mtmd makes it: scaled to fit the encoder's
//! size with its aspect kept (a separable filter, triangle or cubic, whose support widens with the
//! shrinking, in 22-bit fixed point on 8-bit pixels, as Pillow resamples), centered on black, then
//! each value scaled to [0, 1] and normalized by the projector's mean and std; cut into patches in
//! the order the encoder's patch embedding reads them. Gemma 3's encoder takes a fixed square;
//! Gemma 4's takes a size near the image's own (`size_preserving_ratio`).

use super::Image;

/// Fractional bits of the filter's fixed-point weights: 32 bits less 8 for the pixel, 2 of headroom.
const PRECISION_BITS: u32 = 22;

/// The filter an encoder's images are resampled with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resample {
    /// Pillow's BILINEAR: a triangle one sample wide (Gemma 3).
    Bilinear,
    /// Pillow's BICUBIC: a cubic two samples wide, a = -0.5 (Gemma 4).
    Bicubic,
}

impl Resample {
    /// How far the filter reaches, in samples, before widening.
    fn support(self) -> f64 {
        match self {
            Resample::Bilinear => 1.0,
            Resample::Bicubic => 2.0,
        }
    }

    /// The filter's weight at distance `x` from a sample's center.
    fn weight(self, x: f64) -> f64 {
        let x = x.abs();
        match self {
            Resample::Bilinear if x < 1.0 => 1.0 - x,
            Resample::Bicubic => {
                const A: f64 = -0.5;
                if x < 1.0 {
                    ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
                } else if x < 2.0 {
                    (((x - 5.0) * x + 8.0) * x - 4.0) * A
                } else {
                    0.0
                }
            }
            Resample::Bilinear => 0.0,
        }
    }
}

/// `image` scaled to fit `width` x `height` with its aspect kept (each side rounded up, as mtmd
/// pads), centered on black.
pub fn fit(image: &Image, (width, height): (u32, u32), filter: Resample) -> Image {
    if (image.width, image.height) == (width, height) {
        return image.clone();
    }
    // f32 as mtmd computes it, so the rounding up lands where its does.
    let scale = (width as f32 / image.width as f32).min(height as f32 / image.height as f32);
    let side = |n: u32, most: u32| ((n as f32 * scale).ceil() as u32).clamp(1, most);
    let (w, h) = (side(image.width, width), side(image.height, height));
    let scaled = resize(image, (w, h), filter);
    let mut out = Image {
        width,
        height,
        rgb: vec![0; (width * height * 3) as usize],
    };
    let (x0, y0) = ((width - w) / 2, (height - h) / 2);
    for y in 0..h {
        let from = (y * w * 3) as usize;
        let to = (((y0 + y) * width + x0) * 3) as usize;
        out.rgb[to..to + (w * 3) as usize]
            .copy_from_slice(&scaled.rgb[from..from + (w * 3) as usize]);
    }
    out
}

/// The size mtmd scales an image of `width` x `height` to for an encoder that takes sizes near the
/// image's own: each side rounded to a multiple of `align`, then the whole scaled down or up (its
/// aspect kept) into [min_pixels, max_pixels], in f32 as mtmd computes it.
pub fn size_preserving_ratio(
    (width, height): (u32, u32),
    align: u32,
    (min_pixels, max_pixels): (u64, u64),
) -> (u32, u32) {
    let f = align as f32;
    let (w, h) = (width as f32, height as f32);
    let round = |x: f32| (x / f).round() as u32 * align;
    let ceil = |x: f32| (x / f).ceil() as u32 * align;
    let floor = |x: f32| (x / f).floor() as u32 * align;
    let (mut w_bar, mut h_bar) = (round(w).max(align), round(h).max(align));
    let pixels = w_bar as u64 * h_bar as u64;
    if pixels > max_pixels {
        let beta = (h * w / max_pixels as f32).sqrt();
        (w_bar, h_bar) = (floor(w / beta).max(align), floor(h / beta).max(align));
    } else if pixels < min_pixels {
        let beta = (min_pixels as f32 / (h * w)).sqrt();
        (w_bar, h_bar) = (ceil(w * beta), ceil(h * beta));
    }
    (w_bar, h_bar)
}

/// `image` resampled to `width` x `height`: across each row first, then down each column.
pub fn resize(image: &Image, (width, height): (u32, u32), filter: Resample) -> Image {
    let mut out = image.clone();
    if width != out.width {
        let filter = Filter::new(out.width, width, filter);
        let mut rgb = vec![0; (width * out.height * 3) as usize];
        for y in 0..out.height as usize {
            let row = &out.rgb[y * out.width as usize * 3..][..out.width as usize * 3];
            for x in 0..width as usize {
                let (first, weights) = filter.taps(x);
                for c in 0..3 {
                    let sum = weights.iter().enumerate().fold(Filter::HALF, |s, (i, &w)| {
                        s + row[(first + i) * 3 + c] as i32 * w
                    });
                    rgb[(y * width as usize + x) * 3 + c] = Filter::to_u8(sum);
                }
            }
        }
        out = Image { width, rgb, ..out };
    }
    if height != out.height {
        let filter = Filter::new(out.height, height, filter);
        let stride = out.width as usize * 3;
        let mut rgb = vec![0; stride * height as usize];
        for y in 0..height as usize {
            let (first, weights) = filter.taps(y);
            for i in 0..stride {
                let sum = weights.iter().enumerate().fold(Filter::HALF, |s, (k, &w)| {
                    s + out.rgb[(first + k) * stride + i] as i32 * w
                });
                rgb[y * stride + i] = Filter::to_u8(sum);
            }
        }
        out = Image { height, rgb, ..out };
    }
    out
}

/// The taps of a filter from `from` samples to `to`: for each output sample, its first input
/// sample and the weights of it and those after it.
struct Filter {
    first: Vec<usize>,
    weights: Vec<Vec<i32>>,
}

impl Filter {
    /// Half of one in fixed point: the sums start there, so the shift rounds.
    const HALF: i32 = 1 << (PRECISION_BITS - 1);

    fn new(from: u32, to: u32, kind: Resample) -> Filter {
        let scale = from as f64 / to as f64;
        // Shrinking widens the filter so every input sample counts; growing keeps it as it is.
        let widen = scale.max(1.0);
        let support = kind.support() * widen;
        let (mut first, mut weights) = (Vec::new(), Vec::new());
        for out in 0..to as usize {
            let center = (out as f64 + 0.5) * scale;
            let lo = ((center - support + 0.5) as i64).max(0) as usize;
            let hi = ((center + support + 0.5) as i64).min(from as i64) as usize;
            let raw: Vec<f64> = (lo..hi)
                .map(|i| kind.weight((i as f64 - center + 0.5) / widen))
                .collect();
            let total: f64 = raw.iter().sum();
            let one = (1u64 << PRECISION_BITS) as f64;
            let fixed = raw
                .iter()
                .map(|&w| {
                    let w = if total != 0.0 { w / total } else { w };
                    // Rounded half away from zero, then truncated, as Pillow does.
                    (w * one + if w < 0.0 { -0.5 } else { 0.5 }) as i32
                })
                .collect();
            first.push(lo);
            weights.push(fixed);
        }
        Filter { first, weights }
    }

    fn taps(&self, out: usize) -> (usize, &[i32]) {
        (self.first[out], &self.weights[out])
    }

    fn to_u8(sum: i32) -> u8 {
        (sum >> PRECISION_BITS).clamp(0, 255) as u8
    }
}

/// The image's values, each scaled to [0, 1] then normalized by `mean` and `std` per channel, cut
/// into `patch` x `patch` patches: a row per patch (the grid's rows top to bottom, each left to
/// right), each row the patch's values channel by channel, each channel row by row.
pub fn patches(image: &Image, patch: u32, mean: [f32; 3], std: [f32; 3]) -> Vec<f32> {
    assert!(image.width.is_multiple_of(patch) && image.height.is_multiple_of(patch));
    let p = patch as usize;
    let (cols, rows) = (image.width as usize / p, image.height as usize / p);
    let width = image.width as usize;
    let mut out = Vec::with_capacity(image.rgb.len());
    for py in 0..rows {
        for px in 0..cols {
            for c in 0..3 {
                for y in 0..p {
                    for x in 0..p {
                        let at = ((py * p + y) * width + px * p + x) * 3 + c;
                        let v = image.rgb[at] as f32 / 255.0;
                        out.push((v - mean[c]) / std[c]);
                    }
                }
            }
        }
    }
    out
}

/// Patch rows (`per` values each) of a grid `cols` wide, row by row, put in `merge` x `merge`
/// squares: the squares row by row, each square's patches row by row (Qwen-VL's order, in which each
/// square becomes a token).
pub fn in_squares(values: &[f32], per: u32, cols: u32, merge: u32) -> Vec<f32> {
    let (per, cols, m) = (per as usize, cols as usize, merge as usize);
    let rows = values.len() / per / cols;
    let mut out = Vec::with_capacity(values.len());
    for sy in (0..rows).step_by(m) {
        for sx in (0..cols).step_by(m) {
            for y in sy..sy + m {
                for x in sx..sx + m {
                    out.extend_from_slice(&values[(y * cols + x) * per..][..per]);
                }
            }
        }
    }
    out
}

/// Rows of `per` values, each padded with zeros to `to` values (the kernels read rows in 32s).
pub fn padded_rows(values: &[f32], per: u32, to: u32) -> Vec<f32> {
    values
        .chunks(per as usize)
        .flat_map(|row| {
            row.iter()
                .copied()
                .chain(std::iter::repeat(0.0))
                .take(to as usize)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(width: u32, height: u32, f: impl Fn(u32, u32, u32) -> u8) -> Image {
        let mut rgb = Vec::new();
        for y in 0..height {
            for x in 0..width {
                rgb.extend((0..3).map(|c| f(x, y, c)));
            }
        }
        Image { width, height, rgb }
    }

    #[test]
    fn a_flat_image_stays_flat_at_any_size() {
        let flat = image(37, 23, |_, _, c| [200, 17, 93][c as usize]);
        for (w, h) in [(8, 8), (64, 40), (100, 100), (37, 5)] {
            let r = resize(&flat, (w, h), Resample::Bicubic);
            assert!(r.rgb.chunks(3).all(|p| p == [200, 17, 93]), "{w}x{h}");
        }
    }

    /// Rows of red values resized, against Pillow 13's `Image.resize(.., BILINEAR)` on the same rows.
    #[test]
    fn rows_resize_as_pillow_resizes_them() {
        let row =
            |values: &'static [u8]| image(values.len() as u32, 1, |x, _, _| values[x as usize]);
        let red = |img: Image| img.rgb.chunks(3).map(|p| p[0]).collect::<Vec<u8>>();
        let ramp: &[u8] = &[0, 10, 20, 30, 40, 50, 60, 70];
        assert_eq!(
            red(resize(&row(ramp), (4, 1), Resample::Bilinear)),
            [7, 25, 45, 63]
        );
        let grown = resize(&row(&[0, 200, 50, 255, 90]), (13, 1), Resample::Bilinear);
        assert_eq!(
            red(grown),
            [0, 15, 92, 169, 165, 108, 50, 129, 208, 230, 166, 103, 90]
        );
    }

    /// The same rows resized by Pillow 13's `Image.resize(.., BICUBIC)`: the cubic overshoots and is
    /// clipped to 0..255.
    #[test]
    fn rows_resize_bicubic_as_pillow_resizes_them() {
        let row =
            |values: &'static [u8]| image(values.len() as u32, 1, |x, _, _| values[x as usize]);
        let red = |img: Image| img.rgb.chunks(3).map(|p| p[0]).collect::<Vec<u8>>();
        let cubic =
            |values: &'static [u8], n: u32| red(resize(&row(values), (n, 1), Resample::Bicubic));
        assert_eq!(cubic(&[0, 10, 20, 30, 40, 50, 60, 70], 4), [5, 25, 45, 65]);
        assert_eq!(
            cubic(&[0, 200, 50, 255, 90], 13),
            [0, 9, 93, 185, 182, 98, 50, 120, 226, 247, 171, 98, 73]
        );
        assert_eq!(cubic(&[0, 200, 50, 255, 90, 3, 180], 3), [96, 149, 87]);
    }

    /// Sizes as mtmd's calc_size_preserved_ratio gives them for Gemma 4's encoder (patches of 16
    /// pooled 3 x 3: sides of 48, 70 to 1120 tokens).
    #[test]
    fn sizes_keep_the_ratio_within_the_token_budget() {
        let budget = (70 * 48 * 48, 1120 * 48 * 48);
        // Rounded to 48 and within the budget: 640 x 480 -> 624 x 480 (13 x 10 tokens).
        assert_eq!(size_preserving_ratio((640, 480), 48, budget), (624, 480));
        // Too many tokens: scaled down to fit 1120.
        let (w, h) = size_preserving_ratio((4000, 3000), 48, budget);
        assert_eq!((w % 48, h % 48), (0, 0));
        assert!(
            (w / 48) * (h / 48) <= 1120 && (w, h) == (1824, 1344),
            "{w} x {h}"
        );
        // Too few: scaled up past 70.
        assert_eq!(size_preserving_ratio((100, 75), 48, budget), (480, 384));
    }

    #[test]
    fn a_wide_image_is_centered_between_black_bands() {
        let white = image(100, 50, |_, _, _| 255);
        let fit = fit(&white, (64, 64), Resample::Bilinear);
        let at = |x: u32, y: u32| fit.rgb[((y * 64 + x) * 3) as usize];
        assert_eq!(
            (at(0, 0), at(63, 15), at(0, 16), at(63, 47), at(10, 48)),
            (0, 0, 255, 255, 0)
        );
    }

    #[test]
    fn patches_read_channel_then_row_then_column() {
        let img = image(4, 4, |x, y, c| (c * 100 + y * 4 + x) as u8);
        let p = patches(&img, 2, [0.0; 3], [1.0 / 255.0; 3]);
        let p: Vec<f32> = p.iter().map(|v| v.round()).collect();
        // The second patch of the first row: x 2..4, y 0..2, red then green then blue.
        assert_eq!(
            &p[12..24],
            &[2., 3., 6., 7., 102., 103., 106., 107., 202., 203., 206., 207.]
        );
    }
}

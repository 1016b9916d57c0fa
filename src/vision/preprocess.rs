//! An image made ready for a vision encoder as llama.cpp's mtmd makes it: scaled to fit the encoder's
//! square with its aspect kept (a separable triangle filter whose support widens with the shrinking,
//! in 22-bit fixed point on 8-bit pixels, as Pillow resamples), centered on black, then each value
//! scaled to [0, 1] and normalized by the projector's mean and std; cut into patches in the order the
//! encoder's patch embedding reads them.

use super::Image;

/// Fractional bits of the filter's fixed-point weights: 32 bits less 8 for the pixel, 2 of headroom.
const PRECISION_BITS: u32 = 22;

/// `image` scaled to fit `size` x `size` (each side rounded up, as mtmd pads), centered on black.
pub fn fit_square(image: &Image, size: u32) -> Image {
    let scale = (size as f64 / image.width as f64).min(size as f64 / image.height as f64);
    // f32 as mtmd computes it, so the rounding up lands where its does.
    let scale = scale as f32;
    let side = |n: u32| ((n as f32 * scale).ceil() as u32).clamp(1, size);
    let (w, h) = (side(image.width), side(image.height));
    let scaled = resize(image, w, h);
    let mut out = Image {
        width: size,
        height: size,
        rgb: vec![0; (size * size * 3) as usize],
    };
    let (x0, y0) = ((size - w) / 2, (size - h) / 2);
    for y in 0..h {
        let from = (y * w * 3) as usize;
        let to = (((y0 + y) * size + x0) * 3) as usize;
        out.rgb[to..to + (w * 3) as usize]
            .copy_from_slice(&scaled.rgb[from..from + (w * 3) as usize]);
    }
    out
}

/// `image` resampled to `width` x `height`: across each row first, then down each column.
pub fn resize(image: &Image, width: u32, height: u32) -> Image {
    let mut out = image.clone();
    if width != out.width {
        let filter = Filter::new(out.width, width);
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
        let filter = Filter::new(out.height, height);
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

/// The taps of a triangle filter from `from` samples to `to`: for each output sample, its first
/// input sample and the weights of it and those after it.
struct Filter {
    first: Vec<usize>,
    weights: Vec<Vec<i32>>,
}

impl Filter {
    /// Half of one in fixed point: the sums start there, so the shift rounds.
    const HALF: i32 = 1 << (PRECISION_BITS - 1);

    fn new(from: u32, to: u32) -> Filter {
        let scale = from as f64 / to as f64;
        // Shrinking widens the triangle so every input sample counts; growing keeps it one wide.
        let widen = scale.max(1.0);
        let support = widen;
        let (mut first, mut weights) = (Vec::new(), Vec::new());
        for out in 0..to as usize {
            let center = (out as f64 + 0.5) * scale;
            let lo = ((center - support + 0.5) as i64).max(0) as usize;
            let hi = ((center + support + 0.5) as i64).min(from as i64) as usize;
            let raw: Vec<f64> = (lo..hi)
                .map(|i| {
                    let d = ((i as f64 - center + 0.5) / widen).abs();
                    if d < 1.0 {
                        1.0 - d
                    } else {
                        0.0
                    }
                })
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

/// The square image's values, each scaled to [0, 1] then normalized by `mean` and `std` per
/// channel, cut into `patch` x `patch` patches: a row per patch (the grid's rows top to bottom, each
/// left to right), each row the patch's values channel by channel, each channel row by row.
pub fn patches(image: &Image, patch: u32, mean: [f32; 3], std: [f32; 3]) -> Vec<f32> {
    assert!(image.width == image.height && image.width.is_multiple_of(patch));
    let (side, p) = ((image.width / patch) as usize, patch as usize);
    let width = image.width as usize;
    let mut out = Vec::with_capacity(image.rgb.len());
    for py in 0..side {
        for px in 0..side {
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
            let r = resize(&flat, w, h);
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
        assert_eq!(red(resize(&row(ramp), 4, 1)), [7, 25, 45, 63]);
        let grown = resize(&row(&[0, 200, 50, 255, 90]), 13, 1);
        assert_eq!(
            red(grown),
            [0, 15, 92, 169, 165, 108, 50, 129, 208, 230, 166, 103, 90]
        );
    }

    #[test]
    fn a_wide_image_is_centered_between_black_bands() {
        let white = image(100, 50, |_, _, _| 255);
        let fit = fit_square(&white, 64);
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

//! Products whose x a norm makes, normed on the way in (`Gpu::fuses_norms`, a GPU's default): the
//! pair kernel for one token and several, a step's tiles and eight tokens a layer, and the pair kernel
//! on 8-bit x, each against the norm and the product on the CPU.

use crate::common;

use common::{f32_buffer, gpu, nmse, packed, plan_at, q8_rounded, run, Rng, Q8_NMSE};
use pollster::FutureExt as _;
use wick::gguf::GgmlType;
use wick::gpu::{
    has_int8_form, read_back_f32, scratch_buffer, Gpu, GpuTensor, Kernel, MatvecKernel,
    MatvecShape, Rounding, XNorm,
};
use wick::ops::matvec::{self, Input};
use wick::ops::rms_norm::{self, RmsNorm};

/// A product whose x a norm makes, normed on the way in by the pair kernel (`Gpu::fuses_norms`),
/// as the output head reads the last norm: 37 rows in parts of 10 (the last part 7, an odd last
/// row), for 1 token and for 3 of a plan of 4 (four to a workgroup, as a GPU runs a step of several
/// sequences untuned; a CPU takes a tile, below), against the norm and the product on the CPU. The
/// norm's own dispatch is gone.
#[test]
fn rms_normed_matvec_against_cpu() {
    let Some(gpu) = common::gpu_with_norms_fused() else {
        return;
    };
    let mut rng = Rng(4242);
    for ty in [GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::F16] {
        let product = NormedProduct::random(&gpu, ty, 1e-6, 4, &mut rng);
        product.step_in(&gpu, product.step_shape(product.w.rows).default_kernel());
        for n_tokens in [1, 3] {
            product.check(&gpu, n_tokens, &format!("{n_tokens} of 4 tokens"));
        }
    }
}

/// A step's pair product of several tokens with its x normed on the way in (a parallel step's or a
/// speculative check's q/k/v and gate/up where the norms are folded into the products, a GPU's
/// default) as a tile (`MatvecShape::takes_tiles`) or eight tokens a layer of workgroups
/// (`MatvecShape::takes_eight_tokens`) or eight rows a slot (`MatvecShape::takes_eight_rows`): every
/// type, 7 tokens of a step of 8 (`STEP_TOKENS_MAX`), in the 64-thread tile (16 tokens, 9 of them
/// past the run), the tile in registers (8 tokens, one past the run) and each eight-token and
/// eight-row candidate (the second four one short; parts of 10 and 7 rows, slots of eight past them;
/// eight rows a slot only where workgroups run on a CPU, their form). The
/// tile sums each token's squares from the x it reads; the four-token kernels each four's from its
/// own. Those on 8-bit x (a GPU's, offered here on every adapter) against W q8_rounded(g x) /
/// sqrt(mean(x^2) + eps).
#[test]
fn rms_normed_step_products_against_cpu() {
    let Some(gpu) = common::gpu_with_norms_fused() else {
        return;
    };
    gpu.set_rounds(Rounding::Int8X, true);
    let mut rng = Rng(4243);
    let eps = 1e-5;
    for ty in GgmlType::ALL {
        let product = NormedProduct::random(&gpu, ty, eps, 8, &mut rng);
        let whole = product.step_shape(product.w.rows);
        assert!(whole.takes_tiles() && whole.takes_eight_tokens());
        let candidates = whole.candidates(gpu.offers());
        let tiles = candidates.iter().filter(|k| k.is_tile()).count();
        assert_eq!(tiles, 2, "{ty}: the two tiles offered");
        assert!(
            candidates.iter().any(|k| k.eight_tokens),
            "{ty}: eight a layer"
        );
        assert_eq!(
            candidates.iter().any(|k| k.slot_size == 4),
            gpu.runs_on_cpu(),
            "{ty}: eight rows a slot, a CPU's form"
        );
        let checked = |k: &&MatvecKernel| k.is_tile() || k.eight_tokens || k.slot_size == 4;
        for &kernel in candidates.iter().filter(checked) {
            product.step_in(&gpu, kernel);
            let on_q8 = kernel.split == wick::gpu::Split::PartsQ8;
            product.check_on(&gpu, 7, &format!("7 of 8 tokens in {kernel}"), on_q8);
        }
    }
}

/// A decode step's one-token pair product with its x normed on the way in, in each slot of two
/// pairs offered where workgroups run on a CPU (`MatvecShape::cpu_slot_size`), every type with a
/// wide form: 37 rows in parts of 10 and 7, so that a slot's second pair lies past a part's end
/// and the last pair is one row.
#[test]
fn rms_normed_two_pairs_a_slot_against_cpu() {
    let Some(gpu) = common::gpu_with_norms_fused() else {
        return;
    };
    let mut rng = Rng(4244);
    for ty in GgmlType::ALL {
        let product = NormedProduct::random(&gpu, ty, 1e-5, 1, &mut rng);
        let shape = product.step_shape(product.w.rows);
        assert_eq!(shape.cpu_slot_size(), Some(2));
        let candidates = shape.candidates(gpu.offers());
        let two_pairs: Vec<_> = candidates.iter().filter(|k| k.slot_size == 2).collect();
        let offered = gpu.runs_on_cpu() && ty != GgmlType::F32;
        assert_eq!(!two_pairs.is_empty(), offered, "{ty}: two pairs a slot");
        for &&kernel in &two_pairs {
            product.step_in(&gpu, kernel);
            product.check(&gpu, 1, &format!("one token in {kernel}"));
        }
    }
}

/// W rmsnorm(x) for the tokens of a plan, W random, 37 rows in parts of 10 (the last part 7, an odd
/// last row), against the norm and the product on the CPU.
struct NormedProduct {
    w: GpuTensor,
    deq: Vec<f32>,
    x: Vec<f32>,
    gain: Vec<f32>,
    eps: f32,
    batch: u32,
}

impl NormedProduct {
    fn random(gpu: &Gpu, ty: GgmlType, eps: f32, batch: u32, rng: &mut Rng) -> NormedProduct {
        let cols = if ty.block_len() == 256 { 768 } else { 736 };
        let row_bytes = ty.bytes_for(cols as u64).unwrap();
        let (w, deq) = packed(gpu, ty, 37, cols, row_bytes * 10 + 64, rng);
        let gain = rng.vec(cols as usize).iter().map(|g| 1.0 + g).collect();
        let x = (rng.vec(batch as usize * cols as usize).iter())
            .map(|v| 5.0 * v)
            .collect();
        NormedProduct {
            w,
            deq,
            x,
            gain,
            eps,
            batch,
        }
    }

    /// The shape of a step's product of its tokens (one, or several), of W's `rows` (a part's, or
    /// all).
    fn step_shape(&self, rows: u32) -> MatvecShape {
        let kernel = Kernel::MatvecPairs(wick::gpu::Store::Rows, XNorm::Rms(self.eps.to_bits()));
        let one = MatvecShape::of(kernel, self.w.ty, self.w.row_len, rows);
        match self.batch {
            1 => one,
            batch => one.in_step(batch),
        }
    }

    /// Has the GPU run each part's product of the step's tokens in `kernel`.
    fn step_in(&self, gpu: &Gpu, kernel: MatvecKernel) {
        let mut tuning = wick::gpu::Tuning::default();
        for part in &self.w.parts {
            tuning
                .matvec
                .insert(self.step_shape(part.rows).key(), kernel);
        }
        gpu.set_tuning(tuning);
    }

    /// Runs the product of the first `n_tokens` in one dispatch a part of W, the norm in it.
    fn check(&self, gpu: &Gpu, n_tokens: usize, what: &str) {
        self.check_on(gpu, n_tokens, what, false)
    }

    /// As `check`; where `on_q8`, the kernel takes g x rounded to 8 bits (`q8_rounded`) and its sums
    /// are held to `Q8_NMSE`.
    fn check_on(&self, gpu: &Gpu, n_tokens: usize, what: &str, on_q8: bool) {
        let (w, batch, ty) = (&self.w, self.batch, self.w.ty);
        let (rows, cols) = (w.rows as usize, w.row_len as usize);
        let (xb, gb) = (f32_buffer(gpu, &self.x), f32_buffer(gpu, &self.gain));
        let bytes = |n: usize| batch as u64 * n as u64 * 4;
        let y = scratch_buffer(gpu, "y", bytes(rows)).block_on().unwrap();
        let xn = scratch_buffer(gpu, "xn", bytes(cols)).block_on().unwrap();
        let step = wick::gpu::StepInput::new(gpu, batch);
        step.write(gpu, 0, &vec![0; n_tokens]);
        let mut plan = wick::gpu::Plan::new(gpu, &step, batch);
        let norm = RmsNorm {
            x: &xb,
            gain: &gb,
            xn: &xn,
            n: w.row_len,
            eps: self.eps,
        };
        matvec::push(&mut plan, w, Input::RmsNorm(norm), &y, false);
        let parts = w.parts.len();
        assert_eq!(plan.dispatch_count(), parts, "{ty}: one dispatch a part");
        run(gpu, plan);
        let got = read_back_f32(gpu, &y, n_tokens * rows).block_on().unwrap();
        let mut want = vec![0f32; n_tokens * rows];
        for (x_t, want_t) in self.x.chunks(cols).zip(want.chunks_mut(rows)) {
            if on_q8 {
                let mean_square = x_t.iter().map(|v| v * v).sum::<f32>() / cols as f32;
                let scale = 1.0 / (mean_square + self.eps).sqrt();
                let gx: Vec<f32> = x_t.iter().zip(&self.gain).map(|(v, g)| v * g).collect();
                matvec::reference(&self.deq, &q8_rounded(&gx), want_t, false);
                want_t.iter_mut().for_each(|y| *y *= scale);
            } else {
                let xn_t = rms_norm::reference(x_t, &self.gain, self.eps);
                matvec::reference(&self.deq, &xn_t, want_t, false);
            }
        }
        let e = nmse(&got, &want);
        let bound = if on_q8 { Q8_NMSE } else { 1e-10 };
        assert!(e < bound, "{ty}, {what}: nmse {e}");
    }
}

/// The pair kernel on 8-bit x with its input's RMSNorm done on the way in (the q/k/v and gate/up
/// products of a decode step on a GPU), for each type with that form and each such candidate, for one
/// token and for five (four to a workgroup, in two layers or in one of eight): the workgroup quantizes g x together and sums x's
/// squares together, so the norm's scale must come from all of them. Against the CPU: W
/// q8_rounded(g x) / sqrt(mean(x^2) + eps), token by token.
#[test]
fn pairs_on_8bit_x_with_the_norm_on_the_way_in_against_cpu() {
    let Some(gpu) = gpu() else { return };
    gpu.set_rounds(Rounding::Int8X, true);
    let fused = gpu.fuses_norms();
    if !gpu.set_fuses_norms(true) {
        panic!("this adapter cannot norm x on the way in");
    }
    let mut rng = Rng(8);
    let (rows, cols, eps) = (38u32, 1280u32, 1e-5f32);
    let d = cols as usize;
    for ty in GgmlType::ALL.into_iter().filter(|&ty| has_int8_form(ty)) {
        let (w, deq) = packed(&gpu, ty, rows, cols, 1 << 20, &mut rng);
        let gain: Vec<f32> = rng.vec(d).iter().map(|g| 1.0 + g).collect();
        let kernel = Kernel::MatvecPairs(wick::gpu::Store::Rows, XNorm::Rms(eps.to_bits()));
        // One token, and the run of 5 below.
        let one = MatvecShape::of(kernel, ty, cols, rows);
        let shapes = [one, one.in_step(5)];
        let candidates = shapes[0].candidates(gpu.offers());
        let on_q8 = candidates
            .iter()
            .filter(|k| k.split == wick::gpu::Split::PartsQ8);
        assert!(on_q8.clone().count() > 0, "{ty}: no candidate on 8-bit x");
        // Several tokens four a layer of workgroups, and eight (the second four's rows one short
        // of three): each four's squares its own.
        let eights = on_q8.clone().map(|&k| (k, true));
        for (candidate, eight_tokens) in on_q8.map(|&k| (k, false)).chain(eights) {
            let mut tuning = wick::gpu::Tuning::default();
            tuning.matvec.insert(shapes[0].key(), candidate);
            let several = MatvecKernel {
                eight_tokens,
                ..candidate
            };
            tuning.matvec.insert(shapes[1].key(), several);
            gpu.set_tuning(tuning);
            let candidate = several;
            for n_tokens in [1usize, 5] {
                let x: Vec<f32> = rng.vec(n_tokens * d).iter().map(|v| 5.0 * v).collect();
                let mut want = vec![0f32; n_tokens * rows as usize];
                let rows_out = want.chunks_mut(rows as usize);
                for (x_t, want_t) in x.chunks(d).zip(rows_out) {
                    let mean_square = x_t.iter().map(|v| v * v).sum::<f32>() / cols as f32;
                    let scale = 1.0 / (mean_square + eps).sqrt();
                    let gx: Vec<f32> = x_t.iter().zip(&gain).map(|(v, g)| v * g).collect();
                    matvec::reference(&deq, &q8_rounded(&gx), want_t, false);
                    want_t.iter_mut().for_each(|y| *y *= scale);
                }
                let buffers = (f32_buffer(&gpu, &x), f32_buffer(&gpu, &gain));
                let scratch = |n: usize| {
                    let bytes = (n_tokens * n) as u64 * 4;
                    scratch_buffer(&gpu, "y", bytes).block_on().unwrap()
                };
                let (y, xn) = (scratch(rows as usize), scratch(d));
                let input = Input::RmsNorm(RmsNorm {
                    x: &buffers.0,
                    gain: &buffers.1,
                    xn: &xn,
                    n: cols,
                    eps,
                });
                let mut plan = plan_at(&gpu, 0, &vec![0; n_tokens]);
                matvec::push(&mut plan, &w, input, &y, false);
                assert_eq!(plan.dispatch_count(), 1, "{ty}: the norm in the product");
                run(&gpu, plan);
                let got = read_back_f32(&gpu, &y, want.len()).block_on().unwrap();
                let e = nmse(&got, &want);
                assert!(
                    e < Q8_NMSE,
                    "{ty} at {candidate}, {n_tokens} tokens: nmse {e}"
                );
            }
        }
    }
    gpu.set_fuses_norms(fused);
    gpu.set_tuning(wick::gpu::Tuning::default());
}

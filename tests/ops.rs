//! Every kernel against its CPU reference on seeded random data with awkward sizes (a prompt's
//! products: ops_matmul.rs; products that norm x on the way in: ops_normed.rs; attention:
//! ops_attention.rs).

use crate::common;

use common::{
    f32_buffer, gpu, nmse, one_token_plan, packed, plan_at, q8_rounded, quant_goldens, run,
    PackedMatrix, RandomFile, Rng, Q8_NMSE,
};
use pollster::FutureExt as _;
use wick::gguf::GgmlType;
use wick::gpu::{
    has_int8_form, read_back_f32, scratch_buffer, GpuTensor, Kernel, MatvecKernel, MatvecShape,
    Rounding, Stacked, XNorm,
};
use wick::ops::glu::{self, Activation};
use wick::ops::matvec::Input;
use wick::ops::rms_norm::RmsNorm;
use wick::ops::{add_position, embed, layer_norm, matvec, rms_norm};

#[test]
fn matvec_every_type_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(1757);
    for ty in GgmlType::ALL {
        // Awkward sizes: 37 rows; a row of 3 K-blocks or 23 small blocks. Split into parts of ~10 rows
        // (and room for a short group of regrouped blocks' heads: src/gpu/regroup.rs).
        let cols = if ty.block_len() == 256 { 768 } else { 736 };
        let rows = 37;
        let row_bytes = ty.bytes_for(cols as u64).unwrap();
        let (w, deq) = packed(&gpu, ty, rows, cols, row_bytes * 10 + 64, &mut rng);
        assert_eq!(
            w.parts.len(),
            4,
            "{ty}: expected the tensor split into 4 parts"
        );
        let x = rng.vec(cols as usize);
        let y0 = rng.vec(rows as usize);
        for accumulate in [false, true] {
            let xb = f32_buffer(&gpu, &x);
            let yb = f32_buffer(&gpu, &y0);
            let mut plan = one_token_plan(&gpu);
            matvec::push(&mut plan, &w, &xb, &yb, accumulate);
            run(&gpu, plan);
            let got = read_back_f32(&gpu, &yb, rows as usize).block_on().unwrap();
            let mut want = y0.clone();
            matvec::reference(&deq, &x, &mut want, accumulate);
            let e = nmse(&got, &want);
            assert!(e < 1e-10, "{ty} accumulate={accumulate}: nmse {e}");
        }
    }
}

/// Matrices that read the same x, stacked: two Q8_0 matrices in one tensor and a Q4_K one beside
/// them, each writing its rows into its place in one output row, for one token (matvec) and for a run
/// of 5 (matmul).
/// A product with a bias (gpt-oss's attention output): for one token the kernel adds it (each part of
/// the tensor its own rows' biases), for a run of 5 a dispatch after; with and without the residual.
#[test]
fn biased_matvec_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(79);
    let (rows, cols) = (37u32, 768u32);
    for ty in [GgmlType::Q4_K, GgmlType::Q8_0] {
        let row_bytes = ty.bytes_for(cols as u64).unwrap();
        let (w, deq) = packed(&gpu, ty, rows, cols, row_bytes * 10 + 64, &mut rng);
        assert_eq!(w.parts.len(), 4);
        let bias = rng.vec(rows as usize);
        let bias_buffer = f32_buffer(&gpu, &bias);
        for (n_tokens, accumulate) in [(1usize, false), (1, true), (5, false), (5, true)] {
            let x = rng.vec(n_tokens * cols as usize);
            let y0 = rng.vec(n_tokens * rows as usize);
            let y = f32_buffer(&gpu, &y0);
            let mut plan = plan_at(&gpu, 0, &vec![0; n_tokens]);
            let x_buffer = f32_buffer(&gpu, &x);
            matvec::push_biased(&mut plan, &w, &x_buffer, (&y, accumulate), &bias_buffer);
            run(&gpu, plan);
            let got = read_back_f32(&gpu, &y, y0.len()).block_on().unwrap();
            let mut want = y0.clone();
            for t in 0..n_tokens {
                let want_t = &mut want[t * rows as usize..(t + 1) * rows as usize];
                let x_t = &x[t * cols as usize..(t + 1) * cols as usize];
                matvec::reference(&deq, x_t, want_t, accumulate);
                want_t.iter_mut().zip(&bias).for_each(|(y, b)| *y += b);
            }
            let e = nmse(&got, &want);
            let label = format!("{ty}, {n_tokens} tokens, accumulate={accumulate}");
            assert!(e < 1e-10, "{label}: nmse {e}");
        }
    }
}

#[test]
fn stacked_matrices_write_side_by_side() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(77);
    let cols = 512u32;
    let (a, a_deq) = packed(&gpu, GgmlType::Q8_0, 40, cols, 1 << 20, &mut rng);
    let (b, b_deq) = packed(&gpu, GgmlType::Q4_K, 24, cols, 1 << 20, &mut rng);
    let stacked = Stacked {
        tensors: vec![(a, 0), (b, 40)],
        rows: 64,
    };
    let deq: Vec<f32> = a_deq.iter().chain(&b_deq).copied().collect();
    for n_tokens in [1usize, 5] {
        let x = rng.vec(n_tokens * cols as usize);
        let y = scratch_buffer(&gpu, "y", (n_tokens * 64) as u64 * 4)
            .block_on()
            .unwrap();
        let mut plan = plan_at(&gpu, 0, &vec![0; n_tokens]);
        matvec::push_stacked(&mut plan, &stacked, &f32_buffer(&gpu, &x), &y);
        run(&gpu, plan);
        let got = read_back_f32(&gpu, &y, n_tokens * 64).block_on().unwrap();
        let mut want = vec![0f32; n_tokens * 64];
        for t in 0..n_tokens {
            let x_t = &x[t * cols as usize..(t + 1) * cols as usize];
            matvec::reference(&deq, x_t, &mut want[t * 64..(t + 1) * 64], false);
        }
        let e = nmse(&got, &want);
        assert!(e < 1e-10, "{n_tokens} tokens: nmse {e}");
    }
}

#[test]
fn embed_every_type_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(99);
    for ty in GgmlType::ALL {
        let cols = if ty.block_len() == 256 { 512 } else { 96 };
        let rows = 29;
        let row_bytes = ty.bytes_for(cols as u64).unwrap();
        let (table, deq) = packed(&gpu, ty, rows, cols, row_bytes * 8 + 64, &mut rng);
        // One run of several tokens: each lands in its own row.
        let tokens = [13u32, 0, 28, 13];
        let out = scratch_buffer(&gpu, "out", (tokens.len() * cols as usize) as u64 * 4)
            .block_on()
            .unwrap();
        // Gemma's scale, sqrt(640), on the odd types.
        let scale = if ty as u32 % 2 == 1 { 25.298221 } else { 1.0 };
        let mut plan = plan_at(&gpu, 0, &tokens);
        embed::push(&mut plan, &table, &out, scale);
        run(&gpu, plan);
        let got = read_back_f32(&gpu, &out, tokens.len() * cols as usize)
            .block_on()
            .unwrap();
        let want: Vec<f32> = tokens
            .iter()
            .flat_map(|&t| deq[(t * cols) as usize..((t + 1) * cols) as usize].to_vec())
            .map(|v| v * scale)
            .collect();
        assert_eq!(got, want, "{ty} tokens {tokens:?}");
    }
}

/// Each quantized type's kernel reads random block bytes (every code and field; tests/goldens/quant/
/// *.raw.bin) as the `gguf` package dequantizes them: every row embedded, a row of 32 or 256 weights.
#[test]
fn embed_reads_raw_blocks_as_gguf_does() {
    let Some(gpu) = gpu() else { return };
    for g in quant_goldens::goldens() {
        if !g.name.contains(".raw.") {
            continue;
        }
        let cols = g.ty.block_len() as u32;
        let rows = g.dequantized.len() as u32 / cols;
        let f = RandomFile::of_matrices(vec![PackedMatrix {
            ty: g.ty,
            rows,
            cols,
            bytes: g.bytes.clone(),
            deq: g.dequantized.clone(),
        }]);
        let table = GpuTensor::upload(&gpu, &f.header, &f.source, f.info(0), u64::MAX, &mut |_| {})
            .block_on()
            .unwrap();
        let tokens: Vec<u32> = (0..rows).collect();
        let out = scratch_buffer(&gpu, "out", g.dequantized.len() as u64 * 4)
            .block_on()
            .unwrap();
        let mut plan = plan_at(&gpu, 0, &tokens);
        embed::push(&mut plan, &table, &out, 1.0);
        run(&gpu, plan);
        let got = read_back_f32(&gpu, &out, g.dequantized.len())
            .block_on()
            .unwrap();
        // Exact but for the order of the K types' scale products (within a millionth of the block's
        // largest weight), and subnormal scales a GPU may flush to zero (within 1e-30).
        for (row, (ours, theirs)) in got
            .chunks(cols as usize)
            .zip(g.dequantized.chunks(cols as usize))
            .enumerate()
        {
            let largest = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
            for (i, (&a, &b)) in ours.iter().zip(theirs).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-6 * largest + 1e-30,
                    "{}: block {row}, weight {i}: GPU {a:e}, gguf {b:e}",
                    g.name
                );
            }
        }
        eprintln!("{}: {} weights as gguf reads them", g.name, got.len());
    }
}

/// LayerNorm over a run of 3 tokens, written into both buffers; then a position table's rows added at
/// position 5, and a one-row table to every token.
#[test]
fn layer_norm_and_position_rows_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(11);
    let (n, rows) = (1757, 3);
    // Off-center rows, so that the mean matters.
    let x: Vec<f32> = rng.vec(n * rows).iter().map(|v| v * 3.0 + 1.5).collect();
    let (w, b) = (rng.vec(n), rng.vec(n));
    let (xb, wb, bb) = (
        f32_buffer(&gpu, &x),
        f32_buffer(&gpu, &w),
        f32_buffer(&gpu, &b),
    );
    let y = scratch_buffer(&gpu, "y", (n * rows) as u64 * 4)
        .block_on()
        .unwrap();
    let mut plan = plan_at(&gpu, 0, &[0; 3]);
    layer_norm::push(&mut plan, &xb, (&wb, &bb), &y, n as u32, 1e-12);
    run(&gpu, plan);
    let want: Vec<f32> = x
        .chunks(n)
        .flat_map(|row| layer_norm::reference(row, &w, &b, 1e-12))
        .collect();
    for (buffer, name) in [(&y, "y"), (&xb, "x in place")] {
        let got = read_back_f32(&gpu, buffer, n * rows).block_on().unwrap();
        let e = nmse(&got, &want);
        assert!(e < 1e-10, "layer_norm {name} nmse {e}");
    }

    let table = rng.vec(n * 10);
    let tb = f32_buffer(&gpu, &table);
    let mut plan = plan_at(&gpu, 5, &[0; 3]);
    add_position::push(&mut plan, (&tb, true), &xb, n as u32);
    add_position::push(&mut plan, (&tb, false), &xb, n as u32);
    run(&gpu, plan);
    let got = read_back_f32(&gpu, &xb, n * rows).block_on().unwrap();
    for t in 0..rows {
        for i in (0..n).step_by(97) {
            let expect = want[t * n + i] + table[(5 + t) * n + i] + table[i];
            assert!(
                (got[t * n + i] - expect).abs() < 1e-5,
                "token {t} value {i}"
            );
        }
    }
}

/// Both row-wise kernels over a run of 3 tokens: each row on its own.
#[test]
fn rms_norm_and_swiglu_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(7);
    let (n, rows) = (1757, 3);
    let (x, w) = (rng.vec(n * rows), rng.vec(n));
    let (xb, wb) = (f32_buffer(&gpu, &x), f32_buffer(&gpu, &w));
    let y = scratch_buffer(&gpu, "y", (n * rows) as u64 * 4)
        .block_on()
        .unwrap();
    let mut plan = plan_at(&gpu, 0, &[0; 3]);
    rms_norm::push(&mut plan, &xb, &wb, &y, n as u32, 1e-5);
    run(&gpu, plan);
    let want: Vec<f32> = x
        .chunks(n)
        .flat_map(|row| rms_norm::reference(row, &w, 1e-5))
        .collect();
    let e = nmse(
        &read_back_f32(&gpu, &y, n * rows).block_on().unwrap(),
        &want,
    );
    assert!(e < 1e-10, "rms_norm nmse {e}");

    // Gates far out on both sides, where GELU's tanh saturates; ups beyond gpt-oss's clamp at 7.
    let g: Vec<f32> = rng.vec(n * rows).iter().map(|v| v * 30.0).collect();
    let u: Vec<f32> = rng.vec(n * rows).iter().map(|v| v * 10.0).collect();
    for act in [
        Activation::Silu,
        Activation::GeluTanh,
        Activation::GeluQuick,
        Activation::SwigluOai,
    ] {
        let h = scratch_buffer(&gpu, "h", (n * rows) as u64 * 4)
            .block_on()
            .unwrap();
        let mut plan = plan_at(&gpu, 0, &[0; 3]);
        let (gb, ub) = (f32_buffer(&gpu, &g), f32_buffer(&gpu, &u));
        glu::push(&mut plan, act, &gb, &ub, &h, n as u32);
        run(&gpu, plan);
        let got = read_back_f32(&gpu, &h, n * rows).block_on().unwrap();
        assert!(got.iter().all(|v| v.is_finite()), "{act:?}: not finite");
        let e = nmse(&got, &glu::reference(act, &g, &u));
        assert!(e < 1e-10, "{act:?} nmse {e}");
    }
}

/// The SwiGLU block, x += down(silu(gate xn) * up xn), against the CPU, for one token (the pair
/// matvec) and a run of 5 (the matmul): gate and up of every type interleaved in one tensor (h
/// straight from their projection), split into parts of whole pairs; then gate and up of two types
/// kept apart (swiglu.wgsl after them); then every kernel shape tuning may choose for the pairs.
#[test]
fn swiglu_block_against_cpu() {
    let Some(gpu) = gpu() else { return };
    // 8-bit x among the candidates below, as on GPUs.
    gpu.set_rounds(Rounding::Int8X, true);
    let mut rng = Rng(64);
    let n_ff = 64u32;
    let interleave = |f: &RandomFile, max_part| {
        let pair = [f.info(0), f.info(1)];
        GpuTensor::upload_interleaved(&gpu, &f.header, &f.source, pair, max_part, &mut |_| {})
            .block_on()
            .unwrap()
    };
    for ty in GgmlType::ALL {
        let cols = if ty.block_len() == 256 { 768 } else { 736 };
        let f = RandomFile::new(&[(ty, n_ff, cols), (ty, n_ff, cols)], &mut rng);
        // Room for 11 rows: parts of 10, five pairs.
        let row_bytes = ty.bytes_for(cols as u64).unwrap();
        let w = interleave(&f, row_bytes * 11 + 64);
        assert!(
            w.parts.iter().all(|p| p.rows == 10 || p.first_row == 120),
            "{ty}"
        );
        let gate_up = glu::GateUp::Interleaved(w);
        check_swiglu_block(
            &gpu,
            &gate_up,
            (&f.deq[0], &f.deq[1]),
            cols,
            (&ty.to_string(), false),
            &mut rng,
        );
    }

    let cols = 768;
    let f = RandomFile::new(
        &[(GgmlType::Q4_K, n_ff, cols), (GgmlType::Q6_K, n_ff, cols)],
        &mut rng,
    );
    let upload = |i: usize| {
        GpuTensor::upload(&gpu, &f.header, &f.source, f.info(i), 1 << 20, &mut |_| {})
            .block_on()
            .unwrap()
    };
    let apart = glu::GateUp::Apart(Stacked {
        tensors: vec![(upload(0), 0), (upload(1), n_ff)],
        rows: 2 * n_ff,
    });
    check_swiglu_block(
        &gpu,
        &apart,
        (&f.deq[0], &f.deq[1]),
        cols,
        ("Q4_K and Q6_K apart", false),
        &mut rng,
    );

    // Every kernel shape, by chunks and by blocks; Q6_K's 210-byte blocks are not word aligned.
    for ty in [GgmlType::Q4_K, GgmlType::Q6_K] {
        let f = RandomFile::new(&[(ty, n_ff, cols), (ty, n_ff, cols)], &mut rng);
        let gate_up = glu::GateUp::Interleaved(interleave(&f, 1 << 20));
        let store = wick::gpu::Store::Glu(Activation::Silu);
        // One token's products and four tokens', x as it is and normed on the way in.
        // (`check_swiglu_block` runs 1 token and 5.)
        let shapes: Vec<MatvecShape> = [XNorm::None, XNorm::Rms(SWIGLU_EPS.to_bits())]
            .into_iter()
            .flat_map(|norm| {
                let one = MatvecShape::of(Kernel::MatvecPairs(store, norm), ty, cols, 2 * n_ff);
                [one, one.in_step(5)]
            })
            .collect();
        for candidate in shapes[0].candidates(gpu.offers()) {
            let mut tuning = wick::gpu::Tuning::default();
            for shape in &shapes {
                // A slot of two pairs is a one-token product's form (`MatvecShape::cpu_slot_size`):
                // a step's takes the same split a pair a slot.
                let slot_size = match shape.tokens {
                    1 => candidate.slot_size,
                    _ => 1,
                };
                let kernel = MatvecKernel {
                    slot_size,
                    ..candidate
                };
                tuning.matvec.insert(shape.key(), kernel);
            }
            gpu.set_tuning(tuning);
            let label = format!("{ty} pairs at {candidate}");
            check_swiglu_block(
                &gpu,
                &gate_up,
                (&f.deq[0], &f.deq[1]),
                cols,
                (&label, candidate.split == wick::gpu::Split::PartsQ8),
                &mut rng,
            );
        }
    }
    gpu.set_tuning(wick::gpu::Tuning::default());
}

/// The eps of the norm `check_swiglu_block` puts before the block.
const SWIGLU_EPS: f32 = 1e-5;

/// `glu::push_ffn` with these gate and up (dequantized: `gate`, `up`) and a random Q8_0 down,
/// against the CPU, for 1 token and for 5; from rows as they are, and from rows that RMSNorm makes
/// (x of another scale, a random gain), normed on the way in (1 token, and 5 four to a workgroup)
/// and by the norm's own kernel. Where `on_q8`, the gate and up products take x rounded to 8 bits
/// (`q8_rounded`), and their sums are held to `Q8_NMSE`.
fn check_swiglu_block(
    gpu: &wick::gpu::Gpu,
    gate_up: &glu::GateUp,
    (gate, up): (&[f32], &[f32]),
    cols: u32,
    (label, on_q8): (&str, bool),
    rng: &mut Rng,
) {
    let (n_ff, d) = (gate_up.n_ff(), cols as usize);
    let (down, down_deq) = packed(gpu, GgmlType::Q8_0, cols, n_ff, 1 << 20, rng);
    let fused = gpu.fuses_norms();
    let mut plain_dispatches = std::collections::HashMap::new();
    for (n_tokens, norm) in [(1usize, None), (5, None), (1, Some(true)), (5, Some(true))]
        .into_iter()
        .chain([(5, Some(false))])
    {
        let (x_in, x0) = (rng.vec(n_tokens * d), rng.vec(n_tokens * d));
        let gain: Vec<f32> = rng.vec(d).iter().map(|g| 1.0 + g).collect();
        let x_in: Vec<f32> = match norm {
            Some(_) => x_in.iter().map(|v| 7.0 * v).collect(),
            None => x_in,
        };
        let x = f32_buffer(gpu, &x0);
        let scratch = |n: u32| {
            let bytes = n_tokens as u64 * n as u64 * 4;
            scratch_buffer(gpu, "scratch", bytes).block_on().unwrap()
        };
        let (gate_up_out, hidden, xn) = (scratch(2 * n_ff), scratch(n_ff), scratch(cols));
        if let Some(fuse) = norm {
            assert!(
                gpu.set_fuses_norms(fuse),
                "this adapter cannot norm x on the way in"
            );
        }
        let mut plan = plan_at(gpu, 0, &vec![0; n_tokens]);
        gpu.set_fuses_norms(fused);
        let (x_in_buffer, gain_buffer) = (f32_buffer(gpu, &x_in), f32_buffer(gpu, &gain));
        let input = match norm {
            None => Input::Rows(&x_in_buffer),
            Some(_) => Input::RmsNorm(RmsNorm {
                x: &x_in_buffer,
                gain: &gain_buffer,
                xn: &xn,
                n: cols,
                eps: SWIGLU_EPS,
            }),
        };
        glu::push_ffn(
            &mut plan,
            Activation::Silu,
            (gate_up, &down),
            input,
            (&gate_up_out, &hidden),
            (&x, true),
        );
        let dispatches = plan.dispatch_count();
        run(gpu, plan);
        // Normed on the way in, as many dispatches as from rows; else the norm's own one more.
        let from_rows = *plain_dispatches.entry(n_tokens).or_insert(dispatches);
        let norm_dispatch = (norm == Some(false)) as usize;
        if matches!(gate_up, glu::GateUp::Interleaved(_)) {
            assert_eq!(dispatches, from_rows + norm_dispatch, "{label}: dispatches");
        }
        let mut want = x0.clone();
        for t in 0..n_tokens {
            let x_t = &x_in[t * d..(t + 1) * d];
            let xn_t = &match (norm, on_q8) {
                (None, false) => x_t.to_vec(),
                (Some(_), false) => rms_norm::reference(x_t, &gain, SWIGLU_EPS),
                (None, true) => q8_rounded(x_t),
                // As the kernel takes it: g x rounded, then the norm's scale.
                (Some(_), true) => {
                    let mean_square = x_t.iter().map(|v| v * v).sum::<f32>() / d as f32;
                    let scale = 1.0 / (mean_square + SWIGLU_EPS).sqrt();
                    let gx: Vec<f32> = x_t.iter().zip(&gain).map(|(v, g)| v * g).collect();
                    q8_rounded(&gx).iter().map(|v| v * scale).collect()
                }
            };
            let (mut g, mut u) = (vec![0f32; n_ff as usize], vec![0f32; n_ff as usize]);
            matvec::reference(gate, xn_t, &mut g, false);
            matvec::reference(up, xn_t, &mut u, false);
            let h = glu::reference(Activation::Silu, &g, &u);
            matvec::reference(&down_deq, &h, &mut want[t * d..(t + 1) * d], true);
        }
        let got = read_back_f32(gpu, &x, want.len()).block_on().unwrap();
        let e = nmse(&got, &want);
        let bound = if on_q8 { Q8_NMSE } else { 1e-10 };
        assert!(
            e < bound,
            "{label}, {n_tokens} tokens, norm {norm:?}: nmse {e}"
        );
    }
}

/// Every kernel shape tuning may choose for a matvec (workgroup, threads per row, subgroup sums where
/// the adapter has subgroups, for the K-quants a split by blocks, and for every type blocks shared by
/// a few threads, and for the types with that form the same on 8-bit x; two rows a slot, the last
/// slot of 37 rows one short) computes the same product as the CPU, every other one added to what y
/// held, for every type (on 8-bit x, the CPU's product of x rounded so: `q8_rounded`). Q6_K's rows
/// of 5 blocks and Q8_0's of 9 start at every place in a group of regrouped blocks
/// (src/gpu/regroup.rs), as rows of 23 blocks do for Q4_0, Q5_0 and MXFP4.
#[test]
fn matvec_every_tuning_candidate_against_cpu() {
    let Some(gpu) = gpu() else { return };
    // 8-bit x among the candidates, as on GPUs.
    gpu.set_rounds(Rounding::Int8X, true);
    // The check that lets tuning offer subgroup sums passes where the sums below are right.
    if gpu.subgroup_size.is_some() {
        assert!(matvec::subgroup_sums_work(&gpu).block_on().unwrap());
    }
    let mut rng = Rng(99);
    for ty in GgmlType::ALL {
        let cols = match ty {
            GgmlType::Q4_K => 1024u32,
            GgmlType::Q5_K => 768,
            GgmlType::Q6_K => 1280,
            GgmlType::Q8_0 => 288,
            _ => 736,
        };
        let rows = 37;
        let (w, deq) = packed(&gpu, ty, rows, cols, 1 << 20, &mut rng);
        let kernel = wick::gpu::Kernel::Matvec;
        let shape = wick::gpu::MatvecShape::of(kernel, ty, cols, rows);
        let x = rng.vec(cols as usize);
        let candidates = shape.candidates(gpu.offers());
        // The types with that form are offered products on 8-bit x too.
        let on_q8 = |k: &wick::gpu::MatvecKernel| k.split == wick::gpu::Split::PartsQ8;
        assert_eq!(candidates.iter().any(on_q8), has_int8_form(ty), "{ty}");
        // Two rows a slot, and where workgroups run on a CPU, four.
        let slots = [2, 4].map(|size| candidates.iter().any(|k| k.slot_size == size));
        assert_eq!(
            slots,
            [true, gpu.offers().cpu_forms && ty != GgmlType::F32],
            "{ty}"
        );
        // Parts loaded a vec4 at a time: every quantized type's, on 8-bit x too, and F16's and
        // BF16's.
        let wide = candidates.iter().filter(|k| k.wide);
        let wide_forms = wide
            .map(|k| k.split)
            .collect::<std::collections::HashSet<_>>();
        let wide_forms_wanted = match ty {
            GgmlType::F32 => 0,
            GgmlType::F16 | GgmlType::BF16 => 1,
            _ => 2,
        };
        assert_eq!(wide_forms.len(), wide_forms_wanted, "{ty}: wide parts");
        // Every other candidate adds to what y holds (a residual add), as the attention output's
        // and down's products do.
        let y0 = rng.vec(rows as usize);
        for (i, candidate) in candidates.into_iter().enumerate() {
            let mut tuning = wick::gpu::Tuning::default();
            tuning.matvec.insert(shape.key(), candidate);
            gpu.set_tuning(tuning);
            let y = f32_buffer(&gpu, &y0);
            let accumulate = i % 2 == 1;
            let mut plan = one_token_plan(&gpu);
            matvec::push(&mut plan, &w, &f32_buffer(&gpu, &x), &y, accumulate);
            run(&gpu, plan);
            let got = read_back_f32(&gpu, &y, rows as usize).block_on().unwrap();
            let mut want = y0.clone();
            let (x_seen, bound) = match on_q8(&candidate) {
                true => (q8_rounded(&x), Q8_NMSE),
                false => (x.clone(), 1e-10),
            };
            matvec::reference(&deq, &x_seen, &mut want, accumulate);
            let e = nmse(&got, &want);
            assert!(e < bound, "{ty} {cols} at {candidate}: nmse {e}");
        }
    }
}

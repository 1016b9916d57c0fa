//! Every kernel against its CPU reference on seeded random data with awkward sizes.

mod common;

use common::{
    f32_buffer, gpu, nmse, one_token_plan, packed, plan_at, quant_goldens, run, PackedMatrix,
    RandomFile, Rng,
};
use pollster::FutureExt as _;
use wick::gguf::GgmlType;
use wick::gpu::{read_back_f32, scratch_buffer, GpuTensor, Stacked};
use wick::ops::glu::{self, Activation};
use wick::ops::rope::Rope;
use wick::ops::{attention, embed, matvec, rms_norm, rope_kv};

#[test]
fn matvec_every_type_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(1757);
    for ty in GgmlType::ALL {
        // Awkward sizes: 37 rows; a row of 3 K-blocks or 23 small blocks. Split into parts of ~10 rows.
        let cols = if ty.block_len() == 256 { 768 } else { 736 };
        let rows = 37;
        let row_bytes = ty.bytes_for(cols as u64).unwrap();
        let (w, deq) = packed(&gpu, ty, rows, cols, row_bytes * 10 + 4, &mut rng);
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

/// The prompt's product (shaders/matmul.wgsl): a run of 21 tokens in a plan for 40, so one 16-token
/// tile is full, one is partly used and one is skipped; 37 rows leave most of the 64-row tile empty.
#[test]
fn matmul_every_type_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(2024);
    let (batch, n_tokens) = (40usize, 21usize);
    for ty in GgmlType::ALL {
        let cols = if ty.block_len() == 256 { 768 } else { 736 };
        let rows = 37usize;
        let row_bytes = ty.bytes_for(cols as u64).unwrap();
        let (w, deq) = packed(&gpu, ty, rows as u32, cols, row_bytes * 10 + 4, &mut rng);
        let x = rng.vec(batch * cols as usize);
        let y0 = rng.vec(batch * rows);
        for accumulate in [false, true] {
            let xb = f32_buffer(&gpu, &x);
            let yb = f32_buffer(&gpu, &y0);
            let step = wick::gpu::StepInput::new(&gpu, batch as u32);
            step.write(&gpu, 0, &vec![0; n_tokens]);
            let mut plan = wick::gpu::Plan::new(&gpu, &step, batch as u32);
            matvec::push(&mut plan, &w, &xb, &yb, accumulate);
            run(&gpu, plan);
            let got = read_back_f32(&gpu, &yb, y0.len()).block_on().unwrap();
            let mut want = y0.clone();
            for t in 0..n_tokens {
                let x_t = &x[t * cols as usize..(t + 1) * cols as usize];
                matvec::reference(&deq, x_t, &mut want[t * rows..(t + 1) * rows], accumulate);
            }
            let e = nmse(&got, &want);
            assert!(e < 1e-10, "{ty} accumulate={accumulate}: nmse {e}");
            // Rows of tokens past the run are left as they were.
            assert_eq!(got[n_tokens * rows..], y0[n_tokens * rows..], "{ty}");
        }
    }
}

/// Matrices that read the same x, stacked: two Q8_0 matrices in one tensor and a Q4_K one beside
/// them, each writing its rows into its place in one output row, for one token (matvec) and for a run
/// of 5 (matmul).
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
        let (table, deq) = packed(&gpu, ty, rows, cols, row_bytes * 8 + 4, &mut rng);
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

/// The attention's projection fused with RoPE and the cache write (`rope_kv::push`), then causal
/// attention over a cache filled at random before the run, against the CPU. q and k are one Q8_0
/// tensor, uploaded in parts of whole heads, and v an F16 one beside it; 32 of each head's 48
/// dimensions rotate, with and without frequency factors. Runs of 1 token (the pair matvec) and of 3
/// and 140 (the matmul): each query sees the keys before it and its own, not the ones after, and the
/// long run's first query sees fewer keys than attention's block of 64, its last several blocks.
#[test]
fn projection_rope_and_attention_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(31);
    let (n_head, n_kv_head, head_dim, n_ctx, cols) = (6u32, 2u32, 48u32, 217u32, 64u32);
    let (q_len, kv_dim) = (
        (n_head * head_dim) as usize,
        (n_kv_head * head_dim) as usize,
    );
    let heads = rope_kv::Heads {
        n_head,
        n_kv_head,
        head_dim,
    };
    let f = RandomFile::new(
        &[
            (GgmlType::Q8_0, q_len as u32, cols),
            (GgmlType::Q8_0, kv_dim as u32, cols),
            (GgmlType::F16, kv_dim as u32, cols),
        ],
        &mut rng,
    );
    let upload = |infos: &[&wick::gguf::TensorInfo], max_part| {
        GpuTensor::upload_stacked(&gpu, &f.header, &f.source, infos, max_part, &mut |_| {})
            .block_on()
            .unwrap()
    };
    // Room for 200 rows: 192, two of the 96-row groups q and k share.
    let qk = upload(&[f.info(0), f.info(1)], 68 * 200 + 4);
    assert_eq!(
        qk.parts.iter().map(|p| p.rows).collect::<Vec<_>>(),
        [192, 192]
    );
    let qkv = Stacked {
        tensors: vec![
            (qk, 0),
            (upload(&[f.info(2)], 1 << 20), (q_len + kv_dim) as u32),
        ],
        rows: (q_len + 2 * kv_dim) as u32,
    };
    let w: Vec<f32> = f.deq.concat();
    let rows = q_len + 2 * kv_dim;
    let factors: Vec<f32> = (0..16).map(|i| 1.0 + i as f32 * 0.25).collect();
    let rope = Rope {
        n_rot: 32,
        freq_base: 10000.0,
        freq_scale: 0.5,
        neox: false,
        yarn: None,
    };
    for (with_factors, pos, n_tokens) in [
        (false, 70u32, 1usize),
        (true, 70, 1),
        (false, 150, 3),
        (true, 5, 140),
    ] {
        let x = rng.vec(n_tokens * cols as usize);
        // The cache before this run: positions < pos random, the rest zero.
        let mut kc = vec![0f32; n_ctx as usize * kv_dim];
        let mut vc = vec![0f32; n_ctx as usize * kv_dim];
        for i in 0..pos as usize * kv_dim {
            kc[i] = rng.f32();
            vc[i] = rng.f32();
        }
        let (kcb, vcb) = (f32_buffer(&gpu, &kc), f32_buffer(&gpu, &vc));
        let fb = rope.freqs_buffer(&gpu, with_factors.then_some(&factors[..]));
        let scratch = |n: usize| {
            scratch_buffer(&gpu, "out", n as u64 * 4)
                .block_on()
                .unwrap()
        };
        let (qb, out) = (scratch(n_tokens * q_len), scratch(n_tokens * q_len));
        let mut plan = plan_at(&gpu, pos, &vec![0; n_tokens]);
        let outputs = rope_kv::RopeBuffers {
            q: &qb,
            k_cache: &kcb,
            v_cache: &vcb,
            freqs: &fb,
        };
        rope_kv::push(
            &mut plan,
            (&qkv, None),
            &f32_buffer(&gpu, &x),
            &rope,
            heads,
            &outputs,
        );
        let abufs = attention::AttentionBuffers {
            q: &qb,
            k_cache: &kcb,
            v_cache: &vcb,
            out: &out,
            sinks: None,
        };
        let shape = attention::Shape::causal(n_head, n_kv_head, head_dim);
        attention::push(&mut plan, shape, &abufs);
        run(&gpu, plan);

        // CPU: project, rotate each token's heads at its position, write the cache, attend causally.
        let fs = with_factors.then_some(&factors[..]);
        let hd = head_dim as usize;
        let mut q_rot = Vec::new();
        for t in 0..n_tokens {
            let p = pos + t as u32;
            let mut y = vec![0f32; rows];
            matvec::reference(
                &w,
                &x[t * cols as usize..(t + 1) * cols as usize],
                &mut y,
                false,
            );
            for h in y[..q_len + kv_dim].chunks_mut(hd) {
                rope.reference(h, p, fs);
            }
            let at = p as usize * kv_dim;
            kc[at..at + kv_dim].copy_from_slice(&y[q_len..q_len + kv_dim]);
            vc[at..at + kv_dim].copy_from_slice(&y[q_len + kv_dim..]);
            q_rot.extend_from_slice(&y[..q_len]);
        }
        let label = format!("factors={with_factors} pos={pos} tokens={n_tokens}");
        let got_q = read_back_f32(&gpu, &qb, q_rot.len()).block_on().unwrap();
        assert!(nmse(&got_q, &q_rot) < 1e-10, "{label}: rotated q");
        let got_kc = read_back_f32(&gpu, &kcb, kc.len()).block_on().unwrap();
        assert!(nmse(&got_kc, &kc) < 1e-10, "{label}: k cache");
        let got_vc = read_back_f32(&gpu, &vcb, vc.len()).block_on().unwrap();
        assert!(nmse(&got_vc, &vc) < 1e-10, "{label}: v cache");

        let heads = (n_head as usize, n_kv_head as usize, hd);
        let want: Vec<f32> = (0..n_tokens)
            .flat_map(|t| {
                let n = pos as usize + t + 1;
                attention_reference(&q_rot[t * q_len..(t + 1) * q_len], (&kc, &vc), n, heads)
            })
            .collect();
        let got = read_back_f32(&gpu, &out, want.len()).block_on().unwrap();
        let e = nmse(&got, &want);
        assert!(e < 1e-9, "{label}: attention nmse {e}");
    }
}

/// The SwiGLU block, x += down(silu(gate xn) * up xn), against the CPU, for one token (the pair
/// matvec) and a run of 5 (the matmul): gate and up of every type interleaved in one tensor (h
/// straight from their projection), split into parts of whole pairs; then gate and up of two types
/// kept apart (swiglu.wgsl after them); then every kernel shape tuning may choose for the pairs.
#[test]
fn swiglu_block_against_cpu() {
    let Some(gpu) = gpu() else { return };
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
        let w = interleave(&f, row_bytes * 11 + 4);
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
            &ty.to_string(),
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
        "Q4_K and Q6_K apart",
        &mut rng,
    );

    // Every kernel shape, by chunks and by blocks; Q6_K's 210-byte blocks are not word aligned.
    for ty in [GgmlType::Q4_K, GgmlType::Q6_K] {
        let f = RandomFile::new(&[(ty, n_ff, cols), (ty, n_ff, cols)], &mut rng);
        let gate_up = glu::GateUp::Interleaved(interleave(&f, 1 << 20));
        let shape = wick::gpu::MatvecShape {
            kernel: wick::gpu::Kernel::MatvecPairs(wick::gpu::Store::Glu(Activation::Silu)),
            ty,
            cols,
            rows: 2 * n_ff,
        };
        for candidate in shape.candidates(gpu.subgroup_size) {
            let mut tuning = wick::gpu::Tuning::default();
            tuning.matvec.insert(shape.key(), candidate);
            gpu.set_tuning(tuning);
            let label = format!("{ty} pairs at {candidate}");
            check_swiglu_block(
                &gpu,
                &gate_up,
                (&f.deq[0], &f.deq[1]),
                cols,
                &label,
                &mut rng,
            );
        }
    }
    gpu.set_tuning(wick::gpu::Tuning::default());
}

/// `glu::push_ffn` with these gate and up (dequantized: `gate`, `up`) and a random Q8_0 down,
/// against the CPU, for 1 token and for 5.
fn check_swiglu_block(
    gpu: &wick::gpu::Gpu,
    gate_up: &glu::GateUp,
    (gate, up): (&[f32], &[f32]),
    cols: u32,
    label: &str,
    rng: &mut Rng,
) {
    let (n_ff, d) = (gate_up.n_ff(), cols as usize);
    let (down, down_deq) = packed(gpu, GgmlType::Q8_0, cols, n_ff, 1 << 20, rng);
    for n_tokens in [1usize, 5] {
        let (xn, x0) = (rng.vec(n_tokens * d), rng.vec(n_tokens * d));
        let x = f32_buffer(gpu, &x0);
        let scratch = |n: u32| {
            let bytes = n_tokens as u64 * n as u64 * 4;
            scratch_buffer(gpu, "scratch", bytes).block_on().unwrap()
        };
        let (gate_up_out, hidden) = (scratch(2 * n_ff), scratch(n_ff));
        let mut plan = plan_at(gpu, 0, &vec![0; n_tokens]);
        let xn_buffer = f32_buffer(gpu, &xn);
        glu::push_ffn(
            &mut plan,
            Activation::Silu,
            (gate_up, &down),
            &xn_buffer,
            (&gate_up_out, &hidden),
            (&x, true),
        );
        run(gpu, plan);
        let mut want = x0.clone();
        for t in 0..n_tokens {
            let xn_t = &xn[t * d..(t + 1) * d];
            let (mut g, mut u) = (vec![0f32; n_ff as usize], vec![0f32; n_ff as usize]);
            matvec::reference(gate, xn_t, &mut g, false);
            matvec::reference(up, xn_t, &mut u, false);
            let h = glu::reference(Activation::Silu, &g, &u);
            matvec::reference(&down_deq, &h, &mut want[t * d..(t + 1) * d], true);
        }
        let got = read_back_f32(gpu, &x, want.len()).block_on().unwrap();
        let e = nmse(&got, &want);
        assert!(e < 1e-10, "{label}, {n_tokens} tokens: nmse {e}");
    }
}

/// One token's attention split over the sequence and merged (flash-decoding), against the CPU: at
/// position 0 (one key, four splits empty), 150 (three splits used, the last partly) and 600 (all
/// five, several blocks each); then at 600 again on a sliding-window layer (the last 300 keys, and the
/// last 37, which leaves four splits empty) scored by Gemma 3 27B's scale, then with scores soft-capped
/// at 2 (Gemma 2); then with sinks (gpt-oss: a logit per head in the softmax, with no value) at
/// position 0, where the one key shares the weight with the sink, and at 600 on a window of 37; and
/// through the whole-head kernel alike.
#[test]
fn split_attention_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(1234);
    let (n_head, n_kv_head, head_dim, n_ctx, n_split) = (8u32, 2u32, 64u32, 640u32, 5u32);
    let kv_dim = (n_kv_head * head_dim) as usize;
    let hd = head_dim as usize;
    let whole = attention::Shape::causal(n_head, n_kv_head, head_dim);
    let windowed = |window| attention::Shape {
        scale: 1.0 / 168f32.sqrt(),
        window,
        ..whole
    };
    let capped = attention::Shape {
        softcap: 2.0,
        ..windowed(300)
    };
    for (pos, shape, with_sinks) in [
        (0u32, whole, false),
        (150, whole, false),
        (600, whole, false),
        (600, windowed(300), false),
        (600, windowed(37), false),
        (600, capped, false),
        (0, whole, true),
        (600, windowed(37), true),
    ] {
        let n = pos as usize + 1;
        let sinks: Option<Vec<f32>> =
            with_sinks.then(|| rng.vec(n_head as usize).iter().map(|v| v * 3.0).collect());
        let sinks_buffer = sinks.as_ref().map(|s| f32_buffer(&gpu, s));
        let q: Vec<f32> = rng
            .vec(hd * n_head as usize)
            .iter()
            .map(|v| v * 4.0)
            .collect();
        let mut kc = vec![0f32; n_ctx as usize * kv_dim];
        let mut vc = vec![0f32; n_ctx as usize * kv_dim];
        for i in 0..n * kv_dim {
            kc[i] = rng.f32();
            vc[i] = rng.f32();
        }
        let (qb, kcb, vcb) = (
            f32_buffer(&gpu, &q),
            f32_buffer(&gpu, &kc),
            f32_buffer(&gpu, &vc),
        );
        let out = scratch_buffer(&gpu, "out", q.len() as u64 * 4)
            .block_on()
            .unwrap();
        let bytes = attention::split_scratch_bytes(n_head, head_dim, n_split);
        let parts = scratch_buffer(&gpu, "parts", bytes).block_on().unwrap();
        let mut plan = plan_at(&gpu, pos, &[0]);
        let b = attention::AttentionBuffers {
            q: &qb,
            k_cache: &kcb,
            v_cache: &vcb,
            out: &out,
            sinks: sinks_buffer.as_ref(),
        };
        attention::push_split(&mut plan, shape, n_split, &b, &parts);
        run(&gpu, plan);
        let heads = (n_head as usize, n_kv_head as usize, hd);
        let first = match shape.window {
            0 => 0,
            w => n.saturating_sub(w as usize),
        };
        let scoring = (shape.scale, shape.softcap);
        let want =
            attention_reference_from(&q, (&kc, &vc), (first, n), heads, scoring, sinks.as_deref());
        let got = read_back_f32(&gpu, &out, want.len()).block_on().unwrap();
        let e = nmse(&got, &want);
        assert!(
            e < 1e-9,
            "pos {pos} window {} sinks {with_sinks}: split nmse {e}",
            shape.window
        );

        let whole_out = scratch_buffer(&gpu, "out", q.len() as u64 * 4)
            .block_on()
            .unwrap();
        let mut plan = plan_at(&gpu, pos, &[0]);
        let b = attention::AttentionBuffers {
            out: &whole_out,
            ..b
        };
        attention::push(&mut plan, shape, &b);
        run(&gpu, plan);
        let got = read_back_f32(&gpu, &whole_out, want.len())
            .block_on()
            .unwrap();
        let e = nmse(&got, &want);
        assert!(
            e < 1e-9,
            "pos {pos} window {} sinks {with_sinks}: nmse {e}",
            shape.window
        );
    }
}

/// Every kernel shape tuning may choose for a matvec (workgroup, threads per row, subgroup sums where
/// the adapter has subgroups, and for the K-quants a split by blocks) computes the same product as the
/// CPU. Q6_K's rows of 5 blocks put every other block and row off word alignment.
#[test]
fn matvec_every_tuning_candidate_against_cpu() {
    let Some(gpu) = gpu() else { return };
    // The check that lets tuning offer subgroup sums passes where the sums below are right.
    if gpu.subgroup_size.is_some() {
        assert!(matvec::subgroup_sums_work(&gpu).block_on().unwrap());
    }
    let mut rng = Rng(99);
    let types = [
        (GgmlType::Q4_K, 1024u32),
        (GgmlType::Q5_K, 768),
        (GgmlType::Q6_K, 1280),
        (GgmlType::Q8_0, 160),
    ];
    for (ty, cols) in types {
        let rows = 37;
        let (w, deq) = packed(&gpu, ty, rows, cols, 1 << 20, &mut rng);
        let kernel = wick::gpu::Kernel::Matvec;
        let shape = wick::gpu::MatvecShape {
            kernel,
            ty,
            cols,
            rows,
        };
        let x = rng.vec(cols as usize);
        for candidate in shape.candidates(gpu.subgroup_size) {
            let mut tuning = wick::gpu::Tuning::default();
            tuning.matvec.insert(shape.key(), candidate);
            gpu.set_tuning(tuning);
            let y = scratch_buffer(&gpu, "y", rows as u64 * 4)
                .block_on()
                .unwrap();
            let mut plan = one_token_plan(&gpu);
            matvec::push(&mut plan, &w, &f32_buffer(&gpu, &x), &y, false);
            run(&gpu, plan);
            let got = read_back_f32(&gpu, &y, rows as usize).block_on().unwrap();
            let mut want = vec![0f32; rows as usize];
            matvec::reference(&deq, &x, &mut want, false);
            let e = nmse(&got, &want);
            assert!(e < 1e-10, "{ty} {cols} at {candidate}: nmse {e}");
        }
    }
}

/// The CPU's grouped-query attention of one token's heads `q` (n_head * head_dim) over the first `n`
/// positions of the caches (n_ctx, n_kv_head, head_dim).
fn attention_reference(
    q: &[f32],
    caches: (&[f32], &[f32]),
    n: usize,
    heads: (usize, usize, usize),
) -> Vec<f32> {
    let scale = 1.0 / (heads.2 as f32).sqrt();
    attention_reference_from(q, caches, (0, n), heads, (scale, 0.0), None)
}

/// As `attention_reference` over positions first..n, scoring by `scale`, with each head's sink.
fn attention_reference_from(
    q: &[f32],
    (k_cache, v_cache): (&[f32], &[f32]),
    (first, n): (usize, usize),
    (n_head, n_kv_head, head_dim): (usize, usize, usize),
    scoring: (f32, f32),
    sinks: Option<&[f32]>,
) -> Vec<f32> {
    let kv_dim = n_kv_head * head_dim;
    (0..n_head)
        .flat_map(|h| {
            let g = h / (n_head / n_kv_head);
            let head_rows = |c: &[f32]| -> Vec<f32> {
                (first..n)
                    .flat_map(|p| {
                        c[p * kv_dim + g * head_dim..p * kv_dim + (g + 1) * head_dim].to_vec()
                    })
                    .collect()
            };
            let qh = &q[h * head_dim..(h + 1) * head_dim];
            let (k, v) = (head_rows(k_cache), head_rows(v_cache));
            let sink = sinks.map(|s| s[h]);
            attention::reference_with_sink(qh, &k, &v, head_dim, scoring, sink)
        })
        .collect()
}

//! Every kernel against its CPU reference on seeded random data with awkward sizes.

mod common;

use common::{f32_buffer, gpu, nmse, one_token_plan, packed, plan_at, run, Rng};
use pollster::FutureExt as _;
use wick::gguf::GgmlType;
use wick::gpu::{read_back_f32, scratch_buffer, Stacked};
use wick::ops::rope::Rope;
use wick::ops::{attention, embed, matvec, rms_norm, rope_kv, swiglu};

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
        let mut plan = plan_at(&gpu, 0, &tokens);
        embed::push(&mut plan, &table, &out);
        run(&gpu, plan);
        let got = read_back_f32(&gpu, &out, tokens.len() * cols as usize)
            .block_on()
            .unwrap();
        let want: Vec<f32> = tokens
            .iter()
            .flat_map(|&t| deq[(t * cols) as usize..((t + 1) * cols) as usize].to_vec())
            .collect();
        assert_eq!(got, want, "{ty} tokens {tokens:?}");
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

    let g: Vec<f32> = rng.vec(n * rows).iter().map(|v| v * 8.0).collect();
    let u = rng.vec(n * rows);
    let h = scratch_buffer(&gpu, "h", (n * rows) as u64 * 4)
        .block_on()
        .unwrap();
    let mut plan = plan_at(&gpu, 0, &[0; 3]);
    swiglu::push(
        &mut plan,
        &f32_buffer(&gpu, &g),
        &f32_buffer(&gpu, &u),
        &h,
        n as u32,
    );
    run(&gpu, plan);
    let e = nmse(
        &read_back_f32(&gpu, &h, n * rows).block_on().unwrap(),
        &swiglu::reference(&g, &u),
    );
    assert!(e < 1e-10, "swiglu nmse {e}");
}

/// RoPE (both orderings, with and without frequency factors) and the cache write for a run of tokens,
/// then causal attention over a cache filled at random before them, against the CPU. Runs of 1 token
/// and of 3 (each query sees the keys before it and its own, not the ones after), and a long run
/// whose first query sees fewer keys than the kernel's block of 64 and whose last sees several blocks.
#[test]
fn rope_and_attention_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(31);
    let (n_head, n_kv_head, head_dim, n_ctx) = (6u32, 2u32, 48u32, 217u32);
    let kv_dim = (n_kv_head * head_dim) as usize;
    let cases = [
        (false, false, 70u32, 1usize),
        (true, false, 70, 3),
        (false, true, 150, 3),
        (true, true, 5, 140),
    ];
    for (neox, with_factors, pos, n_tokens) in cases {
        let rope = Rope {
            n_rot: 32,
            freq_base: 10000.0,
            freq_scale: 0.5,
            neox,
            yarn: None,
        };
        let heads = rope_kv::Heads {
            n_head,
            n_kv_head,
            head_dim,
        };
        let q = rng.vec(n_tokens * (n_head * head_dim) as usize);
        let k = rng.vec(n_tokens * kv_dim);
        let v = rng.vec(n_tokens * kv_dim);
        let factors: Vec<f32> = (0..16).map(|i| 1.0 + i as f32 * 0.25).collect();
        // The cache before this run: positions < pos random, the rest zero.
        let mut kc = vec![0f32; n_ctx as usize * kv_dim];
        let mut vc = vec![0f32; n_ctx as usize * kv_dim];
        for i in 0..pos as usize * kv_dim {
            kc[i] = rng.f32();
            vc[i] = rng.f32();
        }
        // Each token's q, k and v side by side in one row, as the stacked projection writes them.
        let q_len = (n_head * head_dim) as usize;
        let stride = q_len + 2 * kv_dim;
        let qkv: Vec<f32> = (0..n_tokens)
            .flat_map(|t| {
                let mut row = q[t * q_len..(t + 1) * q_len].to_vec();
                row.extend_from_slice(&k[t * kv_dim..(t + 1) * kv_dim]);
                row.extend_from_slice(&v[t * kv_dim..(t + 1) * kv_dim]);
                row
            })
            .collect();
        let qkvb = f32_buffer(&gpu, &qkv);
        let (kcb, vcb) = (f32_buffer(&gpu, &kc), f32_buffer(&gpu, &vc));
        let fb = f32_buffer(&gpu, &factors);
        let out = scratch_buffer(&gpu, "out", q.len() as u64 * 4)
            .block_on()
            .unwrap();
        let mut plan = plan_at(&gpu, pos, &vec![0; n_tokens]);
        let bufs = rope_kv::RopeBuffers {
            qkv: &qkvb,
            k_cache: &kcb,
            v_cache: &vcb,
            factors: with_factors.then_some(&fb),
        };
        rope_kv::push(&mut plan, &rope, heads, &bufs);
        let abufs = attention::AttentionBuffers {
            q: &qkvb,
            q_stride: stride as u32,
            k_cache: &kcb,
            v_cache: &vcb,
            out: &out,
        };
        attention::push(&mut plan, n_head, n_kv_head, head_dim, &abufs);
        run(&gpu, plan);

        // CPU: rotate each token's heads at its position, write the cache, attend causally.
        let f = with_factors.then_some(&factors[..]);
        let hd = head_dim as usize;
        let mut q_rot = q.clone();
        let mut k_rot = k.clone();
        for t in 0..n_tokens {
            let p = pos + t as u32;
            for h in q_rot[t * q_len..(t + 1) * q_len].chunks_mut(hd) {
                rope.reference(h, p, f);
            }
            for h in k_rot[t * kv_dim..(t + 1) * kv_dim].chunks_mut(hd) {
                rope.reference(h, p, f);
            }
            let at = p as usize * kv_dim;
            kc[at..at + kv_dim].copy_from_slice(&k_rot[t * kv_dim..(t + 1) * kv_dim]);
            vc[at..at + kv_dim].copy_from_slice(&v[t * kv_dim..(t + 1) * kv_dim]);
        }
        let label = format!("neox={neox} factors={with_factors} pos={pos} tokens={n_tokens}");
        let got_qkv = read_back_f32(&gpu, &qkvb, qkv.len()).block_on().unwrap();
        let got_q: Vec<f32> = got_qkv
            .chunks(stride)
            .flat_map(|row| row[..q_len].to_vec())
            .collect();
        assert!(nmse(&got_q, &q_rot) < 1e-10, "{label}: rotated q");
        let got_kc = read_back_f32(&gpu, &kcb, kc.len()).block_on().unwrap();
        assert!(nmse(&got_kc, &kc) < 1e-10, "{label}: k cache");

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

/// One token's attention split over the sequence and merged (flash-decoding), against the CPU: at
/// position 0 (one key, four splits empty), 150 (three splits used, the last partly) and 600 (all
/// five, several blocks each).
#[test]
fn split_attention_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(1234);
    let (n_head, n_kv_head, head_dim, n_ctx, n_split) = (8u32, 2u32, 64u32, 640u32, 5u32);
    let kv_dim = (n_kv_head * head_dim) as usize;
    let hd = head_dim as usize;
    for pos in [0u32, 150, 600] {
        let n = pos as usize + 1;
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
            q_stride: n_head * head_dim,
            k_cache: &kcb,
            v_cache: &vcb,
            out: &out,
        };
        attention::push_split(
            &mut plan,
            (n_head, n_kv_head, head_dim),
            n_split,
            &b,
            &parts,
        );
        run(&gpu, plan);
        let heads = (n_head as usize, n_kv_head as usize, hd);
        let want = attention_reference(&q, (&kc, &vc), n, heads);
        let got = read_back_f32(&gpu, &out, want.len()).block_on().unwrap();
        let e = nmse(&got, &want);
        assert!(e < 1e-9, "pos {pos}: nmse {e}");
    }
}

/// Every kernel shape tuning may choose for a matvec ([workgroup, threads per row]) computes the same
/// product as the CPU.
#[test]
fn matvec_every_tuning_candidate_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(99);
    for (ty, cols) in [(GgmlType::Q4_K, 1024u32), (GgmlType::Q8_0, 160)] {
        let rows = 37;
        let (w, deq) = packed(&gpu, ty, rows, cols, 1 << 20, &mut rng);
        let shape = wick::gpu::MatvecShape { ty, cols, rows };
        let x = rng.vec(cols as usize);
        for candidate in shape.candidates() {
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
            assert!(e < 1e-10, "{ty} {cols} at {candidate:?}: nmse {e}");
        }
    }
}

/// The CPU's grouped-query attention of one token's heads `q` (n_head * head_dim) over the first `n`
/// positions of the caches (n_ctx, n_kv_head, head_dim).
fn attention_reference(
    q: &[f32],
    (k_cache, v_cache): (&[f32], &[f32]),
    n: usize,
    (n_head, n_kv_head, head_dim): (usize, usize, usize),
) -> Vec<f32> {
    let kv_dim = n_kv_head * head_dim;
    (0..n_head)
        .flat_map(|h| {
            let g = h / (n_head / n_kv_head);
            let head_rows = |c: &[f32]| -> Vec<f32> {
                (0..n)
                    .flat_map(|p| {
                        c[p * kv_dim + g * head_dim..p * kv_dim + (g + 1) * head_dim].to_vec()
                    })
                    .collect()
            };
            let qh = &q[h * head_dim..(h + 1) * head_dim];
            attention::reference(qh, &head_rows(k_cache), &head_rows(v_cache), head_dim)
        })
        .collect()
}

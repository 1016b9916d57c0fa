//! Every kernel against its CPU reference on seeded random data with awkward sizes.

mod common;

use common::{f32_buffer, gpu, nmse, packed, run, Rng};
use pollster::FutureExt as _;
use wick::gguf::GgmlType;
use wick::gpu::{read_back_f32, scratch_buffer, storage_buffer, Plan};
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
            let mut plan = Plan::new(&gpu);
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

#[test]
fn embed_every_type_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(99);
    for ty in GgmlType::ALL {
        let cols = if ty.block_len() == 256 { 512 } else { 96 };
        let rows = 29;
        let row_bytes = ty.bytes_for(cols as u64).unwrap();
        let (table, deq) = packed(&gpu, ty, rows, cols, row_bytes * 8 + 4, &mut rng);
        for token in [0u32, 13, 28] {
            let step = storage_buffer(&gpu, "step", bytemuck::cast_slice(&[token, 0u32]));
            let out = scratch_buffer(&gpu, "out", cols as u64 * 4)
                .block_on()
                .unwrap();
            let mut plan = Plan::new(&gpu);
            embed::push(&mut plan, &table, &step, &out);
            run(&gpu, plan);
            let got = read_back_f32(&gpu, &out, cols as usize).block_on().unwrap();
            let want = &deq[(token * cols) as usize..((token + 1) * cols) as usize];
            assert_eq!(got, want, "{ty} token {token}");
        }
    }
}

#[test]
fn rms_norm_and_swiglu_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(7);
    let n = 1757;
    let (x, w) = (rng.vec(n), rng.vec(n));
    let (xb, wb) = (f32_buffer(&gpu, &x), f32_buffer(&gpu, &w));
    let y = scratch_buffer(&gpu, "y", n as u64 * 4).block_on().unwrap();
    let mut plan = Plan::new(&gpu);
    rms_norm::push(&mut plan, &xb, &wb, &y, n as u32, 1e-5);
    run(&gpu, plan);
    let e = nmse(
        &read_back_f32(&gpu, &y, n).block_on().unwrap(),
        &rms_norm::reference(&x, &w, 1e-5),
    );
    assert!(e < 1e-10, "rms_norm nmse {e}");

    let g: Vec<f32> = rng.vec(n).iter().map(|v| v * 8.0).collect();
    let u = rng.vec(n);
    let h = scratch_buffer(&gpu, "h", n as u64 * 4).block_on().unwrap();
    let mut plan = Plan::new(&gpu);
    swiglu::push(
        &mut plan,
        &f32_buffer(&gpu, &g),
        &f32_buffer(&gpu, &u),
        &h,
        n as u32,
    );
    run(&gpu, plan);
    let e = nmse(
        &read_back_f32(&gpu, &h, n).block_on().unwrap(),
        &swiglu::reference(&g, &u),
    );
    assert!(e < 1e-10, "swiglu nmse {e}");
}

/// RoPE (both orderings, with and without frequency factors) and the cache write, then attention over a
/// cache filled at random, against the CPU.
#[test]
fn rope_and_attention_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(31);
    let (n_head, n_kv_head, head_dim, n_ctx) = (6u32, 2u32, 48u32, 77u32);
    let kv_dim = (n_kv_head * head_dim) as usize;
    for (neox, with_factors) in [(false, false), (true, false), (false, true)] {
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
        let pos = 70u32;
        let q = rng.vec((n_head * head_dim) as usize);
        let k = rng.vec(kv_dim);
        let v = rng.vec(kv_dim);
        let factors: Vec<f32> = (0..16).map(|i| 1.0 + i as f32 * 0.25).collect();
        // The cache before this step: positions < pos random, the rest zero.
        let mut kc = vec![0f32; n_ctx as usize * kv_dim];
        let mut vc = vec![0f32; n_ctx as usize * kv_dim];
        for i in 0..pos as usize * kv_dim {
            kc[i] = rng.f32();
            vc[i] = rng.f32();
        }
        let (qb, kb, vb) = (
            f32_buffer(&gpu, &q),
            f32_buffer(&gpu, &k),
            f32_buffer(&gpu, &v),
        );
        let (kcb, vcb) = (f32_buffer(&gpu, &kc), f32_buffer(&gpu, &vc));
        let fb = f32_buffer(&gpu, &factors);
        let step = storage_buffer(&gpu, "step", bytemuck::cast_slice(&[0u32, pos]));
        let scores = scratch_buffer(&gpu, "scores", (n_head * n_ctx) as u64 * 4)
            .block_on()
            .unwrap();
        let out = scratch_buffer(&gpu, "out", (n_head * head_dim) as u64 * 4)
            .block_on()
            .unwrap();
        let mut plan = Plan::new(&gpu);
        let bufs = rope_kv::RopeBuffers {
            q: &qb,
            k: &kb,
            v: &vb,
            k_cache: &kcb,
            v_cache: &vcb,
            factors: with_factors.then_some(&fb),
            step: &step,
        };
        rope_kv::push(&mut plan, &rope, heads, &bufs);
        let abufs = attention::AttentionBuffers {
            q: &qb,
            k_cache: &kcb,
            v_cache: &vcb,
            scores: &scores,
            out: &out,
            step: &step,
        };
        attention::push(&mut plan, n_head, n_kv_head, head_dim, n_ctx, &abufs);
        run(&gpu, plan);

        // CPU: rotate, write the cache, attend.
        let f = with_factors.then_some(&factors[..]);
        let mut q_rot = q.clone();
        for h in q_rot.chunks_mut(head_dim as usize) {
            rope.reference(h, pos, f);
        }
        let mut k_rot = k.clone();
        for h in k_rot.chunks_mut(head_dim as usize) {
            rope.reference(h, pos, f);
        }
        let at = pos as usize * kv_dim;
        kc[at..at + kv_dim].copy_from_slice(&k_rot);
        vc[at..at + kv_dim].copy_from_slice(&v);
        let label = format!("neox={neox} factors={with_factors}");
        let got_q = read_back_f32(&gpu, &qb, q.len()).block_on().unwrap();
        assert!(nmse(&got_q, &q_rot) < 1e-10, "{label}: rotated q");
        let got_kc = read_back_f32(&gpu, &kcb, kc.len()).block_on().unwrap();
        assert!(nmse(&got_kc, &kc) < 1e-10, "{label}: k cache");

        let n = pos as usize + 1;
        let hd = head_dim as usize;
        let mut want = Vec::new();
        for h in 0..n_head as usize {
            let g = h / (n_head / n_kv_head) as usize;
            let head_rows = |c: &[f32]| -> Vec<f32> {
                (0..n)
                    .flat_map(|p| c[p * kv_dim + g * hd..p * kv_dim + (g + 1) * hd].to_vec())
                    .collect()
            };
            want.extend(attention::reference(
                &q_rot[h * hd..(h + 1) * hd],
                &head_rows(&kc),
                &head_rows(&vc),
                hd,
            ));
        }
        let got = read_back_f32(&gpu, &out, want.len()).block_on().unwrap();
        let e = nmse(&got, &want);
        assert!(e < 1e-9, "{label}: attention nmse {e}");
    }
}

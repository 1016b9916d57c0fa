//! The kernels that work on rows of logits after the head, against the CPU: greedy's argmax, Gemma 2's
//! final soft-cap, perplexity's log-probability of each token's successor, and the sampler's top-k.

use crate::common;

use common::{f32_buffer, gpu, nmse, plan_at, run, Rng};
use pollster::FutureExt as _;
use wick::gpu::{read_back_f32, scratch_buffer, Plan, StepInput};
use wick::ops::allowed::Allowed;
use wick::ops::{argmax, log_prob, softcap, top_k};
use wick::sampler::{Adjusted, Penalties};

/// Each row's largest value, the first of equals as the CPU's argmax picks it, and its chance (the row's
/// softmax there): rows of Gemma's vocabulary with the maximum tied at two places (in different parts
/// of the first pass, and in one thread's stride), at the last index, and a row of -inf only (index 0,
/// chance 0).
#[test]
fn argmax_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(3);
    let (n, rows) = (262_144usize, 4usize);
    let mut x = rng.vec(n * rows);
    x[1000] = 5.0;
    x[70_001] = 5.0; // tied, later: not chosen
    x[n + 333] = 7.0;
    x[n + 333 + 256] = 7.0; // tied in the same thread's stride
    x[3 * n - 1] = 9.0;
    x[3 * n..].fill(f32::NEG_INFINITY);
    let xb = f32_buffer(&gpu, &x);
    let out_bytes = argmax::choice_bytes(rows as u32, n as u32);
    let out = scratch_buffer(&gpu, "out", out_bytes).block_on().unwrap();
    let allowed = Allowed::new(&gpu, rows as u32, n as u32)
        .block_on()
        .unwrap();
    // The choices with row 1 held to the ids `bits` allows, or every id.
    let choose = |bits: Option<&[u32]>| {
        allowed.write(&gpu, 1, bits);
        let mut plan = plan_at(&gpu, 0, &[0; 4]);
        argmax::push(&mut plan, &xb, &out, n as u32, &allowed);
        run(&gpu, plan);
        let words = read_back_f32(&gpu, &out, 2 * rows).block_on().unwrap();
        let choices: Vec<u32> = words[..rows].iter().map(|v| v.to_bits()).collect();
        (choices, words[rows..].to_vec())
    };
    let want: Vec<u32> = x.chunks(n).map(wick::sampler::argmax).collect();
    assert_eq!(want, [1000, 333, n as u32 - 1, 0]);
    let (choices, chances) = choose(None);
    assert_eq!(choices, want);
    // The chance of the choice: 1 / sum(exp(x - largest)), in f64 on the CPU.
    for (r, row) in x.chunks(n).enumerate().take(3) {
        let top = row[want[r] as usize] as f64;
        let sum: f64 = row.iter().map(|&v| (v as f64 - top).exp()).sum();
        let rel = (chances[r] as f64 * sum - 1.0).abs();
        assert!(
            rel < 1e-4,
            "row {r}: chance {} against {}",
            chances[r],
            1.0 / sum
        );
    }
    assert_eq!(chances[3], 0.0, "a row of -inf");
    // Row 1 without its two largest (333 and 589) and every id past 50 000.
    let mut bits = vec![u32::MAX; n.div_ceil(32)];
    for id in [333, 333 + 256].into_iter().chain(50_000..n) {
        bits[id / 32] &= !(1 << (id % 32));
    }
    let mut row = x[n..2 * n].to_vec();
    for (id, v) in row.iter_mut().enumerate() {
        if bits[id / 32] >> (id % 32) & 1 == 0 {
            *v = f32::NEG_INFINITY;
        }
    }
    let masked = wick::sampler::argmax(&row);
    assert!(masked != 333 && masked < 50_000);
    let (got, _) = choose(Some(&bits));
    assert_eq!(got, [want[0], masked, want[2], want[3]], "row 1 masked");
}

/// Soft-capping in place, on values far past the cap on both sides (where tanh saturates) and near 0, for
/// the run's rows only.
#[test]
fn softcap_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(5);
    let (n, rows) = (1000usize, 3usize);
    let x: Vec<f32> = rng.vec(n * rows).iter().map(|v| v * 1000.0).collect();
    let xb = f32_buffer(&gpu, &x);
    let mut plan = plan_at(&gpu, 0, &[0; 3]);
    softcap::push(&mut plan, &xb, n as u32, 30.0);
    run(&gpu, plan);
    let got = read_back_f32(&gpu, &xb, n * rows).block_on().unwrap();
    assert!(got.iter().all(|v| v.is_finite() && v.abs() <= 30.0));
    let e = nmse(&got, &softcap::reference(&x, 30.0));
    assert!(e < 1e-10, "softcap nmse {e}");
}

/// Each token's log-probability of its successor from its row of logits, against the CPU's in f64:
/// rows of Qwen's vocabulary with logits spread as a model's are (one far above the rest, so the sum
/// of the exponentials is dominated by few), the successor of the run's last token taken from after
/// the run, and a run shorter than the plan's batch (its spare row untouched).
#[test]
fn token_log_probs_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(11);
    let (n_vocab, batch) = (151_936usize, 4usize);
    let mut logits: Vec<f32> = rng.vec(n_vocab * batch).iter().map(|v| v * 12.0).collect();
    logits[2 * n_vocab + 77] = 40.0;
    let tokens = [5u32, 77, 151_935];
    let next = 9;
    let step = StepInput::new(&gpu, batch as u32);
    step.write_followed(&gpu, 0, &tokens, next);
    let mut plan = Plan::new(&gpu, &step, batch as u32);
    let out = scratch_buffer(&gpu, "out", batch as u64 * 4)
        .block_on()
        .unwrap();
    gpu.queue
        .write_buffer(&out, 0, bytemuck::cast_slice(&[7.0f32; 4]));
    log_prob::push(&mut plan, &f32_buffer(&gpu, &logits), &out, n_vocab as u32);
    run(&gpu, plan);
    let got = read_back_f32(&gpu, &out, batch).block_on().unwrap();
    let successors = [77usize, 151_935, 9];
    for (t, &s) in successors.iter().enumerate() {
        let want = log_prob::reference(&logits[t * n_vocab..(t + 1) * n_vocab], s);
        let err = (got[t] as f64 - want).abs();
        assert!(
            err < 1e-4 * want.abs().max(1.0),
            "row {t}: {} vs {want}",
            got[t]
        );
    }
    assert_eq!(got[3], 7.0, "a row beyond the run was written");
}

/// The sampler's candidates (`top_k`): after the bias and the penalties (repetition, presence, frequency), the k largest finite logits with
/// their ids, largest first, the smaller id first among equals, as the CPU picks them. Vocabularies of
/// the tiny test model, SmolLM2, Qwen and Gemma (one to three levels), k of 1, 40 and 64; ties within
/// a slice and across slices, NaN and infinities, penalized tokens of both signs, biased ones seen and not.
#[test]
fn top_k_candidates_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(17);
    for (n, k) in [
        (512usize, 64u32),
        (49_152, 40),
        (151_936, 64),
        (262_144, 1),
        (262_144, 64),
    ] {
        let mut logits: Vec<f32> = rng.vec(n).iter().map(|v| v * 8.0).collect();
        for i in (3..n).step_by(n / 16) {
            logits[i] = 9.5; // tied, in different slices
        }
        logits[1] = 9.5; // tied with them, in the first thread's values
        logits[2] = 12.0; // the largest, penalized below 9.5
        logits[4] = -0.5; // penalized further down
        logits[n - 1] = 11.0;
        logits[100] = f32::NAN;
        logits[101] = f32::INFINITY;
        logits[102] = f32::NEG_INFINITY;
        let penalties = Penalties {
            repeat: 1.3,
            presence: 0.5,
            frequency: 0.25,
        };
        logits[60] = 0.0; // biased up to 10.5, second
        let adjusted = [
            Adjusted::seen(2, 1),
            Adjusted {
                bias: 0.75,
                ..Adjusted::seen(4, 3)
            },
            Adjusted::seen(50, 2),
            Adjusted {
                bias: -3.5,
                ..Adjusted::seen(7, 0)
            },
            Adjusted {
                bias: 10.5,
                ..Adjusted::seen(60, 0)
            },
        ];
        let pick = wick::sampler::Pick::new(k, penalties, &adjusted);
        let xb = f32_buffer(&gpu, &logits);
        let mut plan = plan_at(&gpu, 0, &[0]);
        let allowed = Allowed::new(&gpu, 1, n as u32).block_on().unwrap();
        let candidates = top_k::push(&mut plan, &gpu, &xb, n as u32, (0, &allowed))
            .block_on()
            .unwrap();
        gpu.queue
            .write_buffer(&candidates.pick, 0, bytemuck::bytes_of(&pick));
        run(&gpu, plan);
        let words = read_back_f32(&gpu, &candidates.result, 2 * k as usize)
            .block_on()
            .unwrap();
        let bytes: Vec<u8> = words.iter().flat_map(|v| v.to_le_bytes()).collect();
        let got = top_k::candidates(&bytes, k);
        let want = pick.reference(&logits);
        assert_eq!(want.len(), k as usize);
        let ids = |c: &[(u32, f32)]| c.iter().map(|&(id, _)| id).collect::<Vec<_>>();
        assert_eq!(ids(&got), ids(&want), "n {n}, k {k}");
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g.1 - w.1).abs() <= 1e-6 * w.1.abs(),
                "n {n}: {g:?} against {w:?}"
            );
        }
        if k > 1 {
            assert_eq!(want[0].0, n as u32 - 1); // 11.0, the penalized 12.0 fell to 9.23 - 0.75
            assert_eq!(want[1].0, 60); // 0.0 biased by 10.5
        }
        if k > 2 {
            assert_eq!(want[2].0, 1); // the first of the tied 9.5s
        }
    }
}

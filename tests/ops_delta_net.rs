//! Gated DeltaNet's convolution and recurrence (ops::delta_net) and gated attention's output gate
//! (ops::sigmoid_gate) against their CPU references on seeded random data: a sequence run token by
//! token, in steps of a few tokens and in runs of a prompt (64 tokens, then a ragged 6; or 37 then
//! 33), through the token form and the chunked form at every chunk size, from empty states, with the
//! states left between runs and their reset at position 0. A step's few tokens (a decode step's one,
//! the ragged 6 after a token form's prompt, steps of 5) take the token form that convolves its q, k
//! and v on the way in, reading and writing the convolution's state as the prompt's own dispatch
//! does (every value head's copy of its channels' inputs).

use crate::common;

use common::{f32_buffer, gpu, nmse, plan_at, run, Rng};
use pollster::FutureExt as _;
use wick::gpu::Recurrence;
use wick::gpu::{read_back_f32, scratch_buffer, Gpu};
use wick::ops::delta_net::{self, Shape, State};
use wick::ops::sigmoid_gate;

const EPS: f32 = 1e-6;

/// A layer's weights on the CPU and the GPU, and its states on the GPU.
struct Layer {
    shape: Shape,
    conv: Vec<f32>,
    gates: Vec<f32>,
    norm: Vec<f32>,
    buffers: [wgpu::Buffer; 5], // conv, conv_state, state, gates, norm
}

fn layer(gpu: &Gpu, shape: Shape, rng: &mut Rng) -> Layer {
    let conv: Vec<f32> = rng.vec((shape.conv_channels() * shape.conv_kernel) as usize);
    let n_v = shape.n_v_heads as usize;
    // a = -exp(A_log) from 0.05 to 2.5, dt_bias around 0: decays exp(g) over about 0.2..0.99.
    let mut gates: Vec<f32> = (0..n_v).map(|_| -(rng.f32().abs() * 2.5 + 0.05)).collect();
    gates.extend(rng.vec(n_v));
    let norm: Vec<f32> = rng
        .vec(shape.dim as usize)
        .iter()
        .map(|v| 1.0 + 0.4 * v)
        .collect();
    let zeros = |n: u64| {
        scratch_buffer(gpu, "state", n.max(1) * 4)
            .block_on()
            .unwrap()
    };
    Layer {
        buffers: [
            f32_buffer(gpu, &conv),
            zeros(shape.conv_state_len() as u64),
            zeros(shape.state_len()),
            f32_buffer(gpu, &gates),
            f32_buffer(gpu, &norm),
        ],
        shape,
        conv,
        gates,
        norm,
    }
}

/// Runs `rows` (one per token, at positions pos..) through the layer in one run; returns the read-out.
fn run_gpu(gpu: &Gpu, l: &Layer, pos: u32, rows: &[f32], recurrence: Recurrence) -> Vec<f32> {
    let n = rows.len() / l.shape.row_len() as usize;
    let rows_buffer = f32_buffer(gpu, rows);
    let out_len = n * l.shape.value_dim() as usize;
    let out = scratch_buffer(gpu, "out", out_len as u64 * 4)
        .block_on()
        .unwrap();
    let mut plan = plan_at(gpu, pos, &vec![0; n]);
    let [conv, conv_state, state, gates, norm] = &l.buffers;
    let b = delta_net::Buffers {
        rows: &rows_buffer,
        conv,
        conv_state,
        state,
        gates,
        norm,
        out: &out,
    };
    delta_net::push_with(&mut plan, l.shape, &b, EPS, recurrence);
    run(gpu, plan);
    read_back_f32(gpu, &out, out_len).block_on().unwrap()
}

fn check(shape: Shape, seed: u64) {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(seed);
    let l = layer(&gpu, shape, &mut rng);
    let row_len = shape.row_len() as usize;
    let n_tokens = 70;
    let mut rows = rng.vec(n_tokens * row_len);
    // beta's and alpha's logits spread wide, so that some writes are near full strength and some decays
    // near 1 or near 0.
    for t in 0..n_tokens {
        let at = t * row_len + (shape.conv_channels() + shape.value_dim()) as usize;
        for v in &mut rows[at..at + 2 * shape.n_v_heads as usize] {
            *v *= 4.0;
        }
    }
    let mut state = State::new(shape);
    let want: Vec<f32> = rows
        .chunks(row_len)
        .flat_map(|row| {
            delta_net::reference(shape, row, &mut state, (&l.conv, &l.gates, &l.norm), EPS)
        })
        .collect();

    // Every form a prompt's plan may take here (each chunk that fits, then the token form).
    let limit = gpu.limits.max_compute_workgroup_storage_size;
    let mut forms = Vec::new();
    for form in shape.recurrence(64).candidates(limit) {
        // 64 and 6: whole chunks, then a part of one; 37 and 33: a part of a chunk in both runs.
        forms.push((form, 64));
        if form != Recurrence::Tokens {
            forms.push((form, 37));
        }
    }
    assert!(forms.len() > 1, "{shape:?}: no chunk fits the adapter");
    for (recurrence, split) in forms {
        // Garbage in the states first: a run at position 0 must not read them.
        let garbage = rng.vec(shape.state_len() as usize);
        gpu.queue
            .write_buffer(&l.buffers[2], 0, bytemuck::cast_slice(&garbage));
        let mut chunked = run_gpu(&gpu, &l, 0, &rows[..split * row_len], recurrence);
        chunked.extend(run_gpu(
            &gpu,
            &l,
            split as u32,
            &rows[split * row_len..],
            recurrence,
        ));
        let e = nmse(&chunked, &want);
        assert!(
            e < 1e-9,
            "{shape:?} {recurrence:?}: runs of {split} and the rest: read-out nmse {e}"
        );
        let s = read_back_f32(&gpu, &l.buffers[2], state.s.len())
            .block_on()
            .unwrap();
        let e = nmse(&s, &state.s);
        assert!(
            e < 1e-9,
            "{shape:?} {recurrence:?}: state after the runs nmse {e}"
        );
        check_conv_state(
            &gpu,
            &l,
            &state,
            &format!("{recurrence:?}, runs of {split}"),
        );
    }

    // Token by token from position 0 (the decode steps' form), and in steps of 5 (a speculative
    // check's), each a step's few tokens.
    for step in [1, 5] {
        let runs = rows.chunks(step * row_len).enumerate();
        let stepped: Vec<f32> = runs
            .flat_map(|(r, run)| run_gpu(&gpu, &l, (r * step) as u32, run, Recurrence::Tokens))
            .collect();
        let e = nmse(&stepped, &want);
        assert!(e < 1e-9, "{shape:?}: steps of {step}: read-out nmse {e}");
        check_conv_state(&gpu, &l, &state, &format!("steps of {step}"));
    }
}

/// The convolution's state on the GPU against the reference's after the same tokens: every value
/// head's copy of its channels' last inputs.
fn check_conv_state(gpu: &Gpu, l: &Layer, want: &State, what: &str) {
    let shape = l.shape;
    let held = read_back_f32(gpu, &l.buffers[1], shape.conv_state_len() as usize)
        .block_on()
        .unwrap();
    let (by_channel, copies_agree) = shape.conv_state_by_channel(&held);
    assert!(copies_agree, "{shape:?}, {what}: the heads' copies differ");
    let e = nmse(&by_channel, &want.conv);
    assert!(e < 1e-12, "{shape:?}, {what}: conv state nmse {e}");
}

#[test]
fn delta_net_against_cpu() {
    // Value heads sharing key heads in turn; Qwen3.5's head size and 4 taps.
    check(
        Shape {
            n_k_heads: 2,
            n_v_heads: 6,
            dim: 128,
            conv_kernel: 4,
        },
        11,
    );
    // A head per thread group of 32, no history in the convolution, one key head for all.
    check(
        Shape {
            n_k_heads: 1,
            n_v_heads: 3,
            dim: 32,
            conv_kernel: 1,
        },
        12,
    );
}

#[test]
fn sigmoid_gate_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(13);
    let (n, row_len, at, tokens) = (1000, 1757, 300, 3);
    let x = rng.vec(n * tokens);
    let g: Vec<f32> = rng.vec(row_len * tokens).iter().map(|v| v * 20.0).collect();
    let (xb, gb) = (f32_buffer(&gpu, &x), f32_buffer(&gpu, &g));
    let mut plan = plan_at(&gpu, 0, &[0; 3]);
    sigmoid_gate::push(&mut plan, &xb, n as u32, (&gb, row_len as u32, at as u32));
    run(&gpu, plan);
    let want: Vec<f32> = (0..tokens)
        .flat_map(|t| {
            let gates = &g[t * row_len + at..t * row_len + at + n];
            sigmoid_gate::reference(&x[t * n..(t + 1) * n], gates)
        })
        .collect();
    let e = nmse(
        &read_back_f32(&gpu, &xb, n * tokens).block_on().unwrap(),
        &want,
    );
    assert!(e < 1e-12, "sigmoid gate nmse {e}");

    // One gate per row: the value at `at` scales the whole row.
    let xb = f32_buffer(&gpu, &x);
    let mut plan = plan_at(&gpu, 0, &[0; 3]);
    sigmoid_gate::push_per_row(&mut plan, &xb, n as u32, (&gb, row_len as u32, at as u32));
    run(&gpu, plan);
    let want: Vec<f32> = (0..tokens)
        .flat_map(|t| {
            let gates = vec![g[t * row_len + at]; n];
            sigmoid_gate::reference(&x[t * n..(t + 1) * n], &gates)
        })
        .collect();
    let e = nmse(
        &read_back_f32(&gpu, &xb, n * tokens).block_on().unwrap(),
        &want,
    );
    assert!(e < 1e-12, "per-row sigmoid gate nmse {e}");
}

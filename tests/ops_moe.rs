//! A mixture of experts' kernels, against CPU references on seeded random data: the router, matvecs
//! over the routed experts (split into parts across expert boundaries), the experts' biases, and the
//! whole experts' block over a chunk and a token in every kernel shape the tuner may give it.

use crate::common;

use common::{
    f32_buffer, gpu, matrix_cores_only, nmse, one_token_plan, packed, plan_at, q8_rounded, run,
    run_tuned, Rng, Q8_NMSE,
};
use pollster::FutureExt as _;
use wick::gguf::GgmlType;
use wick::gpu::{
    has_int8_form, read_back_f32, scratch_buffer, Gpu, GpuTensor, Kernel, MatvecKernel,
    MatvecShape, Rounding, Split, Tuning, XNorm,
};
use wick::ops::glu::{self, Activation};
use wick::ops::matvec::Input;
use wick::ops::matvec_id::{self, Experts, Output};
use wick::ops::moe::{self, ExpertBiases, ExpertWeights, ExpertsGateUp, MoeBuffers, MoeShape};
use wick::ops::moe_route::{self, Gating, RouterBiases};
use wick::ops::rms_norm::RmsNorm;

#[test]
fn router_and_expert_matvecs_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(11);
    let (n_expert, rows, cols) = (8u32, 48u32, 256u32);
    let gatings = [
        (
            Gating {
                n_expert,
                n_used: 2,
                sigmoid: false,
                normalize: false,
                scale: 1.0,
            },
            false,
        ),
        (
            Gating {
                n_expert,
                n_used: 3,
                sigmoid: true,
                normalize: true,
                scale: 2.5,
            },
            true,
        ),
    ];
    for ty in [
        GgmlType::Q4_K,
        GgmlType::Q5_0,
        GgmlType::F16,
        GgmlType::MXFP4,
    ] {
        // Parts of 80 rows: experts straddle part boundaries.
        let row_bytes = ty.bytes_for(cols as u64).unwrap();
        let (w, deq) = packed(
            &gpu,
            ty,
            n_expert * rows,
            cols,
            row_bytes * 80 + 64,
            &mut rng,
        );
        assert!(w.parts.len() >= 4);
        for (g, with_bias) in &gatings {
            // With a bias, the row also carries a value after the logits (a shared expert's gate),
            // which the router must not read as an expert's.
            let stride = n_expert + *with_bias as u32;
            let mut logits: Vec<f32> = rng.vec(stride as usize).iter().map(|v| v * 3.0).collect();
            let bias: Vec<f32> = rng.vec(n_expert as usize).iter().map(|v| v * 0.5).collect();
            let bias = with_bias.then_some(&bias[..]);
            if *with_bias {
                logits[n_expert as usize] = 100.0;
            }
            // With a bias, the router's logits have one too (gpt-oss's), added before the
            // probabilities: the reference takes them biased.
            let logit_bias: Vec<f32> = rng.vec(n_expert as usize);
            let logit_bias = with_bias.then_some(&logit_bias[..]);
            let biased: Vec<f32> = (0..n_expert as usize)
                .map(|e| logits[e] + logit_bias.map_or(0.0, |b| b[e]))
                .collect();
            let (ids, weights) = moe_route::reference(g, &biased, bias);
            let route = scratch_buffer(&gpu, "route", g.n_used as u64 * 8)
                .block_on()
                .unwrap();
            let bias_buffer = bias.map(|b| f32_buffer(&gpu, b));
            let logit_bias_buffer = logit_bias.map(|b| f32_buffer(&gpu, b));
            let mut plan = one_token_plan(&gpu);
            let biases = RouterBiases {
                logits: logit_bias_buffer.as_ref(),
                selection: bias_buffer.as_ref(),
            };
            moe_route::push(
                &mut plan,
                g,
                (&f32_buffer(&gpu, &logits), stride),
                biases,
                &route,
            );
            run(&gpu, plan);
            let got: Vec<u32> = bytemuck::cast_slice(
                &gpu.read_back(&route, g.n_used as u64 * 8)
                    .block_on()
                    .unwrap(),
            )
            .to_vec();
            assert_eq!(&got[..g.n_used as usize], &ids[..], "{g:?}: chosen experts");
            let got_w: Vec<f32> = got[g.n_used as usize..]
                .iter()
                .map(|&b| f32::from_bits(b))
                .collect();
            assert!(
                nmse(&got_w, &weights) < 1e-10,
                "{g:?}: weights {got_w:?} {weights:?}"
            );

            // With a bias, the experts have theirs too: each slot's expert's row added.
            let expert_bias: Vec<f32> = rng.vec((n_expert * rows) as usize);
            let expert_bias = with_bias.then_some(&expert_bias[..]);
            let expert_bias_buffer = expert_bias.map(|b| f32_buffer(&gpu, b));
            let experts = Experts {
                rows,
                n_slots: g.n_used,
                route: &route,
                bias: expert_bias_buffer.as_ref(),
            };
            let route = (&ids[..], &weights[..]);
            let w = (&w, &deq[..], expert_bias);
            for output in [Output::PerSlot, Output::WeightedSum] {
                let label = ty.to_string();
                check_expert_matvecs(&gpu, w, &experts, route, output, &label, &mut rng);
            }
            if !*with_bias {
                continue;
            }
            // Every kernel shape the tuner may pick, for both outputs (per slot: rows of every
            // slot from one x; summed: one expert's rows, from an x a slot).
            for (items, x_rows, output) in [
                (rows * g.n_used, 1, Output::PerSlot),
                (rows, g.n_used, Output::WeightedSum),
            ] {
                let shape = MatvecShape {
                    matrices: x_rows,
                    ..MatvecShape::of(Kernel::MatvecId, ty, cols, items)
                };
                for candidate in shape.candidates(gpu.offers()) {
                    let mut tuning = Tuning::default();
                    tuning.matvec.insert(shape.key(), candidate);
                    gpu.set_tuning(tuning);
                    let label = format!("{} at {candidate}", shape.key());
                    check_expert_matvecs(&gpu, w, &experts, route, output, &label, &mut rng);
                }
                gpu.set_tuning(Tuning::default());
            }
        }
    }
}

/// The chosen experts' matvecs (`ids`, `weights`) over `w` (dequantized: `deq`; the experts' biases:
/// `bias`) against the CPU, to `output`: per slot from one x, or summed by weight into a residual
/// from one x per slot.
fn check_expert_matvecs(
    gpu: &Gpu,
    (w, deq, bias): (&GpuTensor, &[f32], Option<&[f32]>),
    experts: &Experts,
    (ids, weights): (&[u32], &[f32]),
    output: Output,
    label: &str,
    rng: &mut Rng,
) {
    let (rows, cols) = (experts.rows, w.row_len);
    let n_slots = experts.n_slots;
    let (x_stride, x_len, y_rows) = match output {
        Output::WeightedSum => (cols, cols * n_slots, rows),
        _ => (0, cols, rows * n_slots),
    };
    let x = rng.vec(x_len as usize);
    let y0 = rng.vec(y_rows as usize);
    let y = f32_buffer(gpu, &y0);
    let mut plan = one_token_plan(gpu);
    let x_buffer = f32_buffer(gpu, &x);
    matvec_id::push(&mut plan, w, experts, &x_buffer, x_stride, &y, output);
    run(gpu, plan);
    // Per slot, the rows are written; summed, added to what y held.
    let mut want = match output {
        Output::WeightedSum => y0,
        _ => vec![0f32; y_rows as usize],
    };
    let (c, route) = (cols as usize, (ids, weights));
    matvec_id::reference(
        (deq, bias),
        c,
        route,
        &x,
        x_stride as usize,
        &mut want,
        output,
    );
    let got = read_back_f32(gpu, &y, want.len()).block_on().unwrap();
    let e = nmse(&got, &want);
    let to = match output {
        Output::WeightedSum => "weighted sum",
        _ => "per slot",
    };
    assert!(e < 1e-10, "{label} {to}: nmse {e}");
}

/// The experts' block over a run of 21 tokens (each expert's list in tiles of 16, the second partial),
/// grouped by expert, and over one token (experts read by index), with the stacked tensors split into
/// parts of 80 rows (part boundaries inside experts and inside row tiles): the router per token, gate,
/// up, SwiGLU, down and the weighted sum into the residual, against the CPU token by token; and with
/// biases on the router's logits and on every expert's products (gpt-oss's), which a chunk adds in
/// dispatches of their own and one token inside its products.
#[test]
fn experts_block_over_a_chunk_and_a_token_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(17);
    // 8-bit x among the candidates of a token's products below (Q4_K, Q8_0), and tiles held in f16
    // among a chunk's, as on GPUs.
    gpu.set_rounds(Rounding::Int8X, true);
    gpu.set_rounds(Rounding::F16Tiles, true);
    for ty in [GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::MXFP4] {
        for (n_tokens, biased) in [(21, false), (21, true), (1, false), (1, true)] {
            let block = Block::of(n_tokens, biased);
            check_experts_block(&gpu, ty, block, None, &mut rng);
            if !biased {
                // Gate and up apart, as files whose two differ in type load them.
                let apart = block.apart();
                check_experts_block(&gpu, ty, apart, None, &mut rng);
            }
        }
        // Every tile the tuner may give the experts' products over a chunk (on the matrix cores and
        // in f16, where the adapter has them), over 150 tokens: an expert's list of about 56 items
        // fills tiles of each size and leaves the last one partial.
        let (kernel, d) = (Kernel::MatmulId, EXPERTS_D);
        let shape = MatvecShape::chunk(kernel, ty, (d, d), EXPERTS_N, 150);
        let on_cores = |k: &MatvecKernel| !matrix_cores_only() || k.cooperative.is_some();
        for tile in shape.candidates(gpu.offers()).into_iter().filter(on_cores) {
            if !shape.fits(&tile, &gpu.limits) {
                eprintln!("{}: {tile} does not fit this adapter", shape.key());
                continue;
            }
            let given = Some(Given::Tile(tile));
            check_experts_block(&gpu, ty, Block::of(150, true), given, &mut rng);
        }
        // Every kernel shape the tuner may give a token's products over the chosen experts: gate, up
        // and the activation in one dispatch; gate and up apart; down, whose slots each read an x of
        // their own, summed by weight into x.
        let (d, used) = (EXPERTS_D, EXPERTS_USED);
        let glu = Kernel::MatvecIdGlu(Activation::Silu, XNorm::None);
        let gate_up = MatvecShape::of(glu, ty, d, used * d);
        let apart = MatvecShape::of(Kernel::MatvecId, ty, d, used * d);
        let down = MatvecShape {
            matrices: used,
            ..MatvecShape::of(Kernel::MatvecId, ty, d, d)
        };
        let token_shapes = [(gate_up, true), (apart, false), (down, true)];
        for (shape, interleaved) in token_shapes.into_iter().filter(|_| !matrix_cores_only()) {
            for kernel in token_candidates(&gpu, &shape) {
                let given = Some(Given::Token(shape, kernel));
                // Biases where gate and up are interleaved: files with them load them so.
                let block = match interleaved {
                    true => Block::of(1, true),
                    false => Block::of(1, false).apart(),
                };
                check_experts_block(&gpu, ty, block, given, &mut rng);
            }
        }
    }
}

/// The experts' block over one token whose x a norm makes (`moe::input`), where plans fold norms into
/// their products (a GPU's default): the norm done in gate and up's one dispatch (and the router's
/// and a shared expert's, which are the dense products' kernels), in its default kernel shape and
/// every one the tuner may give it (8-bit x among them), with and without biases, against RMSNorm
/// and the block on the CPU; the norm's rows are never written. Gate and up apart, and a chunk,
/// read the rows of the norm's own dispatch, against the same reference.
#[test]
fn experts_block_with_its_norm_on_the_way_in_against_cpu() {
    let Some(gpu) = common::gpu_with_norms_fused() else {
        return;
    };
    gpu.set_rounds(Rounding::Int8X, true);
    let mut rng = Rng(19);
    for ty in [
        GgmlType::F16,
        GgmlType::F32,
        GgmlType::Q4_K,
        GgmlType::Q8_0,
        GgmlType::MXFP4,
    ] {
        for block in [
            Block::of(1, false),
            Block::of(1, true),
            Block::of(1, false).apart(),
            Block::of(21, false),
        ] {
            check_experts_block(&gpu, ty, block.normed(), None, &mut rng);
        }
        let glu = Kernel::MatvecIdGlu(Activation::Silu, XNorm::Rms(NORM_EPS.to_bits()));
        let shape = MatvecShape::of(glu, ty, EXPERTS_D, EXPERTS_USED * EXPERTS_D);
        for kernel in token_candidates(&gpu, &shape) {
            let given = Some(Given::Token(shape, kernel));
            check_experts_block(&gpu, ty, Block::of(1, true).normed(), given, &mut rng);
        }
    }
}

/// Every kernel shape the tuner may give a token's product over the chosen experts (`shape`) that
/// fits the adapter; those on 8-bit x among them exactly where the type has that form.
fn token_candidates(gpu: &Gpu, shape: &MatvecShape) -> Vec<MatvecKernel> {
    let candidates = shape.candidates(gpu.offers());
    let on_q8 = |k: &MatvecKernel| k.split == Split::PartsQ8;
    assert_eq!(
        candidates.iter().any(on_q8),
        has_int8_form(shape.ty),
        "{}",
        shape.key()
    );
    let fits = |k: &MatvecKernel| shape.fits(k, &gpu.limits);
    candidates.into_iter().filter(fits).collect()
}

/// What check_experts_block runs: the experts' block over `n_tokens` (a chunk's, unless one), gate
/// and up interleaved as loaded where they share a type (or apart), with biases on the router's
/// logits and every expert's products (gpt-oss's; only where interleaved, as files load them), and
/// its x given normed or a norm's to make (RMSNorm of a raw x, its gain random).
#[derive(Clone, Copy)]
struct Block {
    n_tokens: usize,
    interleaved: bool,
    biased: bool,
    normed: bool,
}

impl Block {
    /// Gate and up interleaved, x given normed.
    fn of(n_tokens: usize, biased: bool) -> Block {
        Block {
            n_tokens,
            interleaved: true,
            biased,
            normed: false,
        }
    }

    fn apart(self) -> Block {
        assert!(!self.biased, "the experts have biases only interleaved");
        Block {
            interleaved: false,
            ..self
        }
    }

    fn normed(self) -> Block {
        Block {
            normed: true,
            ..self
        }
    }
}

/// The eps of check_experts_block's norm, where it makes one.
const NORM_EPS: f32 = 1e-5;

/// A kernel shape check_experts_block gives its products, where not their defaults.
#[derive(Clone, Copy)]
enum Given {
    /// The tile of every product over a chunk.
    Tile(MatvecKernel),
    /// The kernel of one of a token's products (a matvec's shape) over the chosen experts.
    Token(MatvecShape, MatvecKernel),
}

impl Given {
    fn kernel(&self) -> MatvecKernel {
        match *self {
            Given::Tile(k) | Given::Token(_, k) => k,
        }
    }
}

/// The experts of check_experts_block: how many, how many a token, and their rows' width (n_embd and
/// n_ff alike).
const EXPERTS_N: u32 = 8;
const EXPERTS_USED: u32 = 3;
const EXPERTS_D: u32 = 256;

/// One run of the experts' block `block` says, against the CPU, its products in the kernel shapes
/// their tuning gives them, or where `given`, that one.
fn check_experts_block(gpu: &Gpu, ty: GgmlType, block: Block, given: Option<Given>, rng: &mut Rng) {
    let Block {
        n_tokens,
        interleaved,
        biased,
        normed,
    } = block;
    let (n_expert, n_used, d, n_ff) = (EXPERTS_N, EXPERTS_USED, EXPERTS_D, EXPERTS_D);
    let mut tuning = Tuning::default();
    match given {
        Some(Given::Tile(tile)) => {
            // Gate and up's shape, interleaved and apart, and down's.
            for (cols, rows) in [(d, 2 * n_ff), (d, n_ff), (n_ff, d)] {
                let experts = (Kernel::MatmulId, n_expert, n_tokens as u32);
                let shape = MatvecShape::chunk(experts.0, ty, (cols, rows), experts.1, experts.2);
                tuning.matvec.insert(shape.key(), tile);
            }
        }
        Some(Given::Token(shape, kernel)) => {
            tuning.matvec.insert(shape.key(), kernel);
        }
        None => {}
    }
    gpu.set_tuning(tuning.clone());
    let g = Gating {
        n_expert,
        n_used,
        sigmoid: true,
        normalize: true,
        scale: 2.5,
    };
    let part = ty.bytes_for(d as u64).unwrap() * 80 + 64;
    let (gate_up, gate_deq, up_deq) = match interleaved {
        true => {
            // One tensor, gate's and up's rows in turn (parts of 80 rows hold whole pairs).
            let (t, deq) = packed(gpu, ty, 2 * n_expert * n_ff, d, part, rng);
            let rows = deq.chunks(d as usize);
            let gate = rows.clone().step_by(2).flatten().copied().collect();
            let up = rows.skip(1).step_by(2).flatten().copied().collect();
            (ExpertsGateUp::Interleaved(t), gate, up)
        }
        false => {
            let (gate, gate_deq) = packed(gpu, ty, n_expert * n_ff, d, part, rng);
            let (up, up_deq) = packed(gpu, ty, n_expert * n_ff, d, part, rng);
            (ExpertsGateUp::Apart { gate, up }, gate_deq, up_deq)
        }
    };
    let (down, down_deq) = packed(gpu, ty, n_expert * d, n_ff, part, rng);
    assert!(down.parts.len() > 4);
    let logits: Vec<f32> = (rng.vec(n_tokens * n_expert as usize).iter())
        .map(|v| v * 3.0)
        .collect();
    // x as given: the products' x, or where normed, the norm's, whose gain is random.
    let x_given: Vec<f32> = rng
        .vec(n_tokens * d as usize)
        .iter()
        .map(|v| 5.0 * v)
        .collect();
    let gain: Vec<f32> = rng.vec(d as usize).iter().map(|g| 1.0 + g).collect();
    let x0 = rng.vec(n_tokens * d as usize);
    // The biases: the router's logits', and gate's, up's and down's per expert.
    let bias_values =
        [n_expert, n_expert * n_ff, n_expert * n_ff, n_expert * d].map(|n| rng.vec(n as usize));
    let bias_buffers = bias_values.each_ref().map(|b| f32_buffer(gpu, b));
    let bias = |i: usize| biased.then_some(&bias_values[i][..]);
    // Gate's and up's biases, interleaved as their rows are.
    let gate_up_bias: Vec<f32> = (bias_values[1].iter().zip(&bias_values[2]))
        .flat_map(|(&g, &u)| [g, u])
        .collect();
    let gate_up_bias = f32_buffer(gpu, &gate_up_bias);

    let rows = |label: &str, n: u32| {
        scratch_buffer(gpu, label, (n_tokens as u32 * n) as u64 * 4)
            .block_on()
            .unwrap()
    };
    let route = rows("route", 2 * n_used);
    let groups = scratch_buffer(
        gpu,
        "groups",
        moe::groups_len(n_expert, n_tokens as u32) * 4,
    )
    .block_on()
    .unwrap();
    let (gate_out, up_out, hidden) = (
        rows("gate", 2 * n_used * n_ff),
        rows("up", n_used * n_ff),
        rows("hidden", n_used * n_ff),
    );
    let out = rows("out", n_used * d);
    let x = f32_buffer(gpu, &x0);
    let mut plan = plan_at(gpu, 0, &vec![0; n_tokens]);
    let logits_buffer = f32_buffer(gpu, &logits);
    let router_biases = RouterBiases {
        logits: biased.then_some(&bias_buffers[0]),
        selection: None,
    };
    moe_route::push(
        &mut plan,
        &g,
        (&logits_buffer, n_expert),
        router_biases,
        &route,
    );
    let shape = MoeShape {
        n_expert,
        n_used,
        n_embd: d,
        n_ff,
        activation: Activation::Silu,
    };
    let weights = ExpertWeights {
        gate_up: &gate_up,
        down: &down,
        biases: biased.then(|| ExpertBiases {
            gate_up: &gate_up_bias,
            down: &bias_buffers[3],
        }),
    };
    let buffers = MoeBuffers {
        route: &route,
        groups: &groups,
        gate: &gate_out,
        up: &up_out,
        hidden: &hidden,
        out: &out,
    };
    let (x_given_buffer, gain_buffer) = (f32_buffer(gpu, &x_given), f32_buffer(gpu, &gain));
    let norm_rows = rows("normed x", d);
    let xn = match normed {
        true => Input::RmsNorm(RmsNorm {
            x: &x_given_buffer,
            gain: &gain_buffer,
            xn: &norm_rows,
            n: d,
            eps: NORM_EPS,
        }),
        false => Input::Rows(&x_given_buffer),
    };
    let xn = moe::input(&mut plan, &gate_up, xn);
    moe::push_hidden(&mut plan, shape, &weights, xn, &buffers);
    moe::push_down(&mut plan, shape, &weights, &buffers, &x);
    match given {
        Some(_) => run_tuned(gpu, plan, &tuning),
        None => run(gpu, plan),
    }

    // On 8-bit x, gate and up read x rounded so, or down reads h rounded so (the slots' x).
    let on_q8 = given.is_some_and(|g| g.kernel().split == Split::PartsQ8);
    let down_on_q8 = on_q8 && matches!(given, Some(Given::Token(s, _)) if s.matrices > 1);
    let gate_up_on_q8 = on_q8 && !down_on_q8;
    let mut want = x0.clone();
    let (d, f, u, e) = (
        d as usize,
        n_ff as usize,
        n_used as usize,
        n_expert as usize,
    );
    for t in 0..n_tokens {
        let biased_logits: Vec<f32> = (0..e)
            .map(|i| logits[t * e + i] + bias(0).map_or(0.0, |b| b[i]))
            .collect();
        let (ids, w) = moe_route::reference(&g, &biased_logits, None);
        let route = (&ids[..], &w[..]);
        // Gate and up read g x / sqrt(mean(x^2) + eps) where normed (on 8-bit x, g x rounded, then
        // scaled), or x as given.
        let x_row = &x_given[t * d..(t + 1) * d];
        let (gx, scale) = match normed {
            true => {
                let mean_square = x_row.iter().map(|v| v * v).sum::<f32>() / d as f32;
                let gx: Vec<f32> = x_row.iter().zip(&gain).map(|(v, g)| v * g).collect();
                (gx, 1.0 / (mean_square + NORM_EPS).sqrt())
            }
            false => (x_row.to_vec(), 1.0),
        };
        let gx = match gate_up_on_q8 {
            true => q8_rounded(&gx),
            false => gx,
        };
        let x_t: Vec<f32> = gx.iter().map(|v| v * scale).collect();
        let x_t = &x_t[..];
        let (mut gs, mut us) = (vec![0f32; u * f], vec![0f32; u * f]);
        let per_slot = Output::PerSlot;
        matvec_id::reference((&gate_deq, bias(1)), d, route, x_t, 0, &mut gs, per_slot);
        matvec_id::reference((&up_deq, bias(2)), d, route, x_t, 0, &mut us, per_slot);
        let mut h = glu::reference(Activation::Silu, &gs, &us);
        if down_on_q8 {
            h = q8_rounded(&h);
        }
        let want_t = &mut want[t * d..(t + 1) * d];
        let sum = Output::WeightedSum;
        matvec_id::reference((&down_deq, bias(3)), f, route, &h, f, want_t, sum);
    }
    let got = read_back_f32(gpu, &x, want.len()).block_on().unwrap();
    let e = nmse(&got, &want);
    let label = format!(
        "{ty}, {n_tokens} tokens{}{}{}{}",
        if interleaved {
            ""
        } else {
            ", gate and up apart"
        },
        if biased { ", biased" } else { "" },
        if normed { ", normed" } else { "" },
        match given {
            Some(Given::Tile(tile)) => format!(", {tile}"),
            Some(Given::Token(shape, kernel)) => format!(", {} at {kernel}", shape.key()),
            None => String::new(),
        }
    );
    // The matrix cores' tile and the f16 tiles round x and the weights to f16 (see
    // tests/ops_matmul.rs); on 8-bit x, the GPU may round a value of x the other way than the CPU
    // (see Q8_NMSE).
    let in_f16 = given.is_some_and(|g| g.kernel().rounds_to_f16());
    let bound = match (in_f16, on_q8) {
        (true, _) => 1e-5,
        (_, true) => Q8_NMSE,
        _ => 1e-10,
    };
    assert!(e < bound, "{label}: nmse {e}");
    // Where one token's gate and up are one product, a plan that folds norms does this one in the
    // products: its rows are never written.
    if normed {
        let folded = n_tokens == 1 && interleaved && gpu.fuses_norms();
        let rows = read_back_f32(gpu, &norm_rows, d).block_on().unwrap();
        let written = rows.iter().any(|&v| v != 0.0);
        assert_eq!(written, !folded, "{label}: the norm's rows written");
    }
    gpu.set_tuning(Tuning::default());
}

/// Biases after a product, over a run of 3 tokens with their own routes (3 of 5 experts each): one
/// row for every token, each slot's expert's row, and the slots' rows summed by weight.
#[test]
fn biases_one_per_slot_and_by_weight_against_cpu() {
    use wick::ops::bias::{self, Rows};
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(77);
    let (n, n_expert, n_used, n_tokens) = (70usize, 5usize, 3usize, 3usize);
    // Each token's route: n_used distinct ids, then n_used f32 weights, as moe_route writes it.
    let routes: Vec<(Vec<u32>, Vec<f32>)> = [[4u32, 0, 2], [1, 3, 4], [2, 1, 0]]
        .iter()
        .map(|ids| (ids.to_vec(), rng.vec(n_used)))
        .collect();
    let mut route_words = Vec::new();
    for (ids, weights) in &routes {
        route_words.extend(ids.iter().copied());
        route_words.extend(weights.iter().map(|w| w.to_bits()));
    }
    let route = wick::gpu::storage_buffer(&gpu, "route", bytemuck::cast_slice(&route_words));
    for case in 0..3 {
        let b = rng.vec(if case == 0 { n } else { n_expert * n });
        let width = if case == 1 { n_used * n } else { n };
        let y0 = rng.vec(n_tokens * width);
        let yb = f32_buffer(&gpu, &y0);
        let rows = match case {
            0 => Rows::One,
            1 => Rows::PerSlot {
                n_used: n_used as u32,
                route: &route,
            },
            _ => Rows::WeightedSum {
                n_used: n_used as u32,
                route: &route,
            },
        };
        let mut plan = plan_at(&gpu, 0, &[0; 3]);
        bias::push(&mut plan, &f32_buffer(&gpu, &b), rows, &yb, n as u32);
        run(&gpu, plan);
        let got = read_back_f32(&gpu, &yb, y0.len()).block_on().unwrap();
        let mut want = y0.clone();
        for (t, (ids, weights)) in routes.iter().enumerate() {
            let y = &mut want[t * width..(t + 1) * width];
            let route = (case > 0).then_some((ids.as_slice(), weights.as_slice()));
            bias::reference(&b, (n, route), y, case == 2);
        }
        let e = nmse(&got, &want);
        assert!(e < 1e-12, "case {case}: nmse {e}");
    }
}

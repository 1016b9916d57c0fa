//! Attention against its CPU reference on seeded random data: the projection fused with RoPE and the
//! cache write then causal attention over a run, and a run's attention in tiles and on the matrix
//! cores (a decode step's split attention is tests/ops_attention_step.rs).

use crate::common;

use common::attention::{attention_reference_from, cache_buffer, read_cache, stored};
use common::{f32_buffer, gpu, nmse, run, submit, RandomFile, Rng};
use pollster::FutureExt as _;
use wick::gguf::GgmlType;
use wick::gpu::{
    read_back_f32, scratch_buffer, AttentionShape, Choice, GpuTensor, KvType, MatrixCores, Offers,
    PipelineKey, Plan, Segment, Stacked, StepInput, Tunable, Tuning,
};
use wick::ops::matvec::Input;
use wick::ops::rope::Rope;
use wick::ops::{attention, matvec, rope_kv};

/// The attention's projection fused with RoPE and the cache write (`rope_kv::push`), then causal
/// attention over a cache filled at random before the run, against the CPU. q and k are one Q8_0
/// tensor, uploaded in parts of whole heads, and v an F16 one beside it; 32 of each head's 48
/// dimensions rotate, with and without frequency factors. Runs of 1 token (the pair matvec) and of 3
/// and 139 (the matmul): each query sees the keys before it and its own, not the ones after, and the
/// long run's first query sees fewer keys than attention's block of 64, its last several blocks.
/// Then a run of three sequences packed, each at its own rows of the cache (one from position 0, two
/// continuing): causal, and bidirectional (each query sees all of its own sequence, none of the
/// others'). 7 query heads to the kv head, as Qwen2.5 0.5B has: groups of 4 and 3 in a workgroup.
/// Runs of more than 8 tokens take 4 a workgroup: the 139 end in a tile of 3, and the packed run's
/// second tile holds tokens of two sequences.
#[test]
fn projection_rope_and_attention_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(31);
    let (n_head, n_kv_head, head_dim, n_ctx, cols) = (7u32, 1u32, 48u32, 217u32, 64u32);
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
        sections: None,
    };
    // Each case's sequences as (cache row of position 0, first position, tokens).
    let packed: &[(u32, u32, usize)] = &[(0, 10, 5), (40, 0, 7), (100, 3, 4)];
    let cases = [
        (false, &[(0u32, 70u32, 1usize)][..], true),
        (true, &[(0, 70, 1)], true),
        (false, &[(0, 150, 3)], true),
        (true, &[(0, 5, 139)], true),
        (true, packed, true),
        (false, packed, false),
    ];
    let with_types = [KvType::F32, KvType::F16]
        .into_iter()
        .flat_map(|kv| cases.iter().map(move |&case| (kv, case)));
    for (cache_type, (with_factors, sequences, causal)) in with_types {
        let n_tokens: usize = sequences.iter().map(|s| s.2).sum();
        let x = rng.vec(n_tokens * cols as usize);
        // The cache before this run: each sequence's rows before its first position random, the
        // rest zero.
        let mut kc = vec![0f32; n_ctx as usize * kv_dim];
        let mut vc = vec![0f32; n_ctx as usize * kv_dim];
        for &(base, pos, _) in sequences {
            for i in base as usize * kv_dim..(base + pos) as usize * kv_dim {
                kc[i] = rng.f32();
                vc[i] = rng.f32();
            }
        }
        let (kc, vc) = (stored(&kc, cache_type), stored(&vc, cache_type));
        let (mut kc, mut vc) = (kc, vc);
        let kcb = cache_buffer(&gpu, &kc, cache_type);
        let vcb = cache_buffer(&gpu, &vc, cache_type);
        let fb = rope.freqs_buffer(&gpu, with_factors.then_some(&factors[..]));
        let scratch = |n: usize| {
            scratch_buffer(&gpu, "out", n as u64 * 4)
                .block_on()
                .unwrap()
        };
        let (qb, out) = (scratch(n_tokens * q_len), scratch(n_tokens * q_len));
        let ids = vec![0; n_tokens];
        let step = StepInput::new(&gpu, n_tokens as u32);
        let mut taken = 0;
        let segments: Vec<Segment> = sequences
            .iter()
            .map(|&(base, pos, n)| {
                taken += n;
                let tokens = &ids[taken - n..taken];
                Segment::new(base, pos, tokens)
            })
            .collect();
        step.write_segments(&gpu, &segments, 0);
        let mut plan = Plan::new(&gpu, &step, n_tokens as u32);
        let outputs = rope_kv::RopeBuffers {
            q: &qb,
            k_cache: &kcb,
            v_cache: &vcb,
            cache_type,
            freqs: &fb,
        };
        rope_kv::push(
            &mut plan,
            (&qkv, None),
            Input::Rows(&f32_buffer(&gpu, &x)),
            &rope,
            heads,
            &outputs,
        );
        let abufs = attention::AttentionBuffers {
            q: &qb,
            k_cache: &kcb,
            v_cache: &vcb,
            cache_type,
            out: &out,
            sinks: None,
        };
        let shape = attention::Shape {
            causal,
            ..attention::Shape::causal(n_head, n_kv_head, head_dim)
        };
        attention::push(&mut plan, shape, &abufs);
        run(&gpu, plan);

        // CPU: project, rotate each token's heads at its position, write its sequence's cache row,
        // attend over the rows its sequence lets it see.
        let fs = with_factors.then_some(&factors[..]);
        let hd = head_dim as usize;
        let mut q_rot = Vec::new();
        let mut seen = Vec::new();
        let places = sequences.iter().flat_map(|&(base, pos, n)| {
            (pos..pos + n as u32).map(move |p| (base, p, pos + n as u32))
        });
        for (t, (base, p, end)) in places.enumerate() {
            let (base, row) = (base as usize, (base + p) as usize);
            seen.push(match causal {
                true => (base, row + 1),
                false => (base, base + end as usize),
            });
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
            let at = row * kv_dim;
            kc[at..at + kv_dim].copy_from_slice(&stored(&y[q_len..q_len + kv_dim], cache_type));
            vc[at..at + kv_dim].copy_from_slice(&stored(&y[q_len + kv_dim..], cache_type));
            q_rot.extend_from_slice(&y[..q_len]);
        }
        let label = format!(
            "{cache_type:?} factors={with_factors} sequences={sequences:?} causal={causal}"
        );
        let got_q = read_back_f32(&gpu, &qb, q_rot.len()).block_on().unwrap();
        assert!(nmse(&got_q, &q_rot) < 1e-10, "{label}: rotated q");
        // f16: a value whose f32 sums differ in their last bit may round to the next f16.
        let close = match cache_type {
            KvType::F32 => 1e-10,
            KvType::F16 => 1e-7,
        };
        let got_kc = read_cache(&gpu, &kcb, kc.len(), cache_type);
        assert!(nmse(&got_kc, &kc) < close, "{label}: k cache");
        let got_vc = read_cache(&gpu, &vcb, vc.len(), cache_type);
        assert!(nmse(&got_vc, &vc) < close, "{label}: v cache");

        // Attention over the cache as the GPU wrote it (checked just above): in f16 a key the GPU's
        // rotation put a last bit apart may have rounded to the next f16, and the scores of every
        // query that reads it move with it, by more than the bound below allows.
        let heads = (n_head as usize, n_kv_head as usize, hd);
        let scoring = (1.0 / (hd as f32).sqrt(), 0.0);
        let want: Vec<f32> = (0..n_tokens)
            .flat_map(|t| {
                let q = &q_rot[t * q_len..(t + 1) * q_len];
                attention_reference_from(q, (&got_kc, &got_vc), seen[t], heads, scoring, None)
            })
            .collect();
        let got = read_back_f32(&gpu, &out, want.len()).block_on().unwrap();
        let e = nmse(&got, &want);
        assert!(e < 1e-9, "{label}: attention nmse {e}");
    }
}

/// A run's attention in tiles (`push_tiled`: 64 queries a workgroup, keys in tiles of 32, 16 or 8 by
/// head size; and `push_chunk` in each form the tuner may give it on this adapter: blocks of 8 or 16
/// queries whose heads are split over 8 threads, where its subgroups allow) and by the whole-head
/// kernel (`push`) against the CPU, over every kind of range the dense block asks for. Both ways over one sequence of 150 tokens (three workgroups, the last partly
/// full), 6 query heads over 2 kv heads of 72 dimensions as SigLIP's. Causal over two sequences in
/// one run, one starting mid-cache at position 30. A chunk of 100 tokens at position 60 on a
/// sliding window of 37 (64-dimension heads, tiles of 32 keys). Both ways on a window of 20 (an
/// encoder's sliding layer). Soft-capped scores on a window of 300 with sinks, heads of 256 (tiles
/// of 8). A prompt with an image's rows in the middle (ids from the vocabulary's end on, a segment
/// of their own): those see their whole segment, the text after them everything before, with sinks.
/// Heads of 128 over 4 kv heads, causal over a chunk of 90 at position 50 (the last block of queries
/// partly full, tiles of keys starting mid-tile).
#[test]
fn tiled_attention_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(99);
    let n_vocab = 1000u32;
    let causal = |n_head, n_kv_head, head_dim| attention::Shape {
        both_ways_from: n_vocab,
        ..attention::Shape::causal(n_head, n_kv_head, head_dim)
    };
    let both_ways = |shape: attention::Shape| attention::Shape {
        causal: false,
        ..shape
    };
    let text = |n: usize| vec![7u32; n];
    // Each case: the shape, whether heads have sinks, and the run's segments as (cache row of
    // position 0, first position, token ids).
    type Segments = Vec<(u32, u32, Vec<u32>)>;
    let cases: Vec<(attention::Shape, bool, Segments)> = vec![
        (both_ways(causal(6, 2, 72)), false, vec![(0, 0, text(150))]),
        (
            causal(6, 2, 72),
            false,
            vec![(0, 0, text(70)), (100, 30, text(50))],
        ),
        (
            attention::Shape {
                window: 37,
                ..causal(4, 4, 64)
            },
            false,
            vec![(0, 60, text(100))],
        ),
        (
            both_ways(attention::Shape {
                window: 20,
                ..causal(4, 2, 64)
            }),
            false,
            vec![(0, 0, text(90))],
        ),
        (
            attention::Shape {
                window: 300,
                softcap: 2.0,
                scale: 0.3,
                ..causal(4, 1, 256)
            },
            true,
            vec![(0, 40, text(70))],
        ),
        (
            causal(4, 2, 64),
            true,
            vec![
                (0, 10, text(5)),
                (0, 15, (0..12).map(|i| n_vocab + i).collect()),
                (0, 27, text(80)),
            ],
        ),
        (causal(8, 4, 128), false, vec![(0, 50, text(90))]),
        // Two requests' prompts read in one chunk, their rows apart in the cache: a workgroup walks
        // each one's keys and skips those between, its first tile (64 keys of 32 dimensions)
        // reaching past the first's into the second's, which it does not hold.
        (
            causal(4, 2, 32),
            false,
            vec![(128, 0, text(6)), (160, 0, text(10))],
        ),
        // The same a few rows apart: the smaller tiles of keys (16 and 32 where queries' heads are
        // split over threads) reach into the second's too.
        (
            causal(4, 2, 32),
            false,
            vec![(128, 0, text(6)), (138, 0, text(10))],
        ),
        // Scores of tens: a query's max grows by more than e^8 between tiles, which the matrix
        // form's outputs are rescaled for.
        (
            attention::Shape {
                scale: 2.0,
                ..causal(4, 2, 64)
            },
            false,
            vec![(0, 20, text(100))],
        ),
    ];
    let mut on_cores = 0;
    let with_types = [KvType::F32, KvType::F16]
        .into_iter()
        .flat_map(|kv| cases.iter().map(move |case| (kv, case)));
    for (cache_type, (shape, with_sinks, sequences)) in with_types {
        let (shape, with_sinks) = (*shape, *with_sinks);
        let hd = shape.head_dim as usize;
        let (n_head, n_kv_head) = (shape.n_head as usize, shape.n_kv_head as usize);
        let (q_len, kv_dim) = (n_head * hd, n_kv_head * hd);
        let n_tokens: usize = sequences.iter().map(|s| s.2.len()).sum();
        let n_ctx = 200usize;
        let kc = stored(&rng.vec(n_ctx * kv_dim), cache_type);
        let vc = stored(&rng.vec(n_ctx * kv_dim), cache_type);
        let q: Vec<f32> = rng.vec(n_tokens * q_len).iter().map(|v| v * 3.0).collect();
        let sinks: Option<Vec<f32>> =
            with_sinks.then(|| rng.vec(n_head).iter().map(|v| v * 3.0).collect());
        let step = StepInput::new(&gpu, n_tokens as u32);
        let segments: Vec<Segment> = sequences
            .iter()
            .map(|(base, pos, tokens)| Segment::new(*base, *pos, tokens))
            .collect();
        step.write_segments(&gpu, &segments, 0);
        let (qb, kcb, vcb) = (
            f32_buffer(&gpu, &q),
            cache_buffer(&gpu, &kc, cache_type),
            cache_buffer(&gpu, &vc, cache_type),
        );
        let sinks_buffer = sinks.as_ref().map(|s| f32_buffer(&gpu, s));

        // Each token's keys, [first, end), as the dense block means them.
        let places = sequences.iter().flat_map(|(base, pos, tokens)| {
            let (base, pos, n) = (*base as usize, *pos as usize, tokens.len());
            (0..n).map(move |i| (base, pos + i, tokens[i], base + pos + n))
        });
        let window = shape.window as usize;
        let want: Vec<f32> = places
            .enumerate()
            .flat_map(|(t, (base, p, id, segment_end))| {
                let seen = match (shape.causal, window) {
                    (true, _) => {
                        let first = base + (p + 1).saturating_sub(window) * (window > 0) as usize;
                        let end = match id >= n_vocab {
                            true => segment_end,
                            false => base + p + 1,
                        };
                        (first, end)
                    }
                    (false, 0) => (base, segment_end),
                    (false, w) => (
                        base + p.saturating_sub(w / 2),
                        segment_end.min(base + p + w / 2 + 1),
                    ),
                };
                attention_reference_from(
                    &q[t * q_len..(t + 1) * q_len],
                    (&kc, &vc),
                    seen,
                    (n_head, n_kv_head, hd),
                    (shape.scale, shape.softcap),
                    sinks.as_deref(),
                )
            })
            .collect();

        type Push = fn(&mut Plan, attention::Shape, &attention::AttentionBuffers);
        let chunk = AttentionShape {
            heads: shape.n_head,
            kv_heads: shape.n_kv_head,
            head_dim: shape.head_dim,
            tokens: n_tokens as u32,
            cache: cache_type,
            splits: None,
            latent: None,
        };
        let mut forms = chunk.candidates(gpu.offers(), gpu.adapter());
        // Mesa's lavapipe advertises 8 x 8 products only, and runs the 16 x 16 ones GPUs take too
        // (scripts/test-matrix-cores.sh).
        let lavapipe = gpu
            .matrix_cores()
            .filter(|_| gpu.info.name.contains("llvmpipe"));
        if let Some(cores) = lavapipe {
            let sixteen = MatrixCores {
                size: 16,
                lanes: cores.lanes.max(16),
            };
            let offers = Offers {
                matrix_cores: Some(sixteen),
                ..gpu.offers()
            };
            let on_cores = chunk.candidates(offers, gpu.adapter()).into_iter();
            forms.extend(on_cores.filter(|f| f.rounding().is_some()));
        }
        on_cores += forms.iter().filter(|f| f.rounding().is_some()).count();
        let chunk_forms = forms.iter().map(|&form| {
            let mut tuning = Tuning::default();
            tuning.insert(&Tunable::Attention(chunk), Choice::Attention(form));
            (
                format!("chunk {form}"),
                attention::push_chunk as Push,
                Some((form, tuning)),
            )
        });
        let plain = [
            ("tiled", attention::push_tiled as Push),
            ("whole", attention::push as Push),
        ];
        let plain = plain.map(|(name, push)| (name.to_string(), push, None));
        for (kernel, push, form) in plain.into_iter().chain(chunk_forms) {
            let (form, tuning) = form.unzip();
            gpu.set_tuning(tuning.unwrap_or_default());
            let out = scratch_buffer(&gpu, "out", (n_tokens * q_len) as u64 * 4)
                .block_on()
                .unwrap();
            let mut plan = Plan::new(&gpu, &step, n_tokens as u32);
            let buffers = attention::AttentionBuffers {
                q: &qb,
                k_cache: &kcb,
                v_cache: &vcb,
                cache_type,
                out: &out,
                sinks: sinks_buffer.as_ref(),
            };
            push(&mut plan, shape, &buffers);
            plan.finish(&gpu).block_on().unwrap();
            if let Some(form) = form {
                let key = PipelineKey::attention(&chunk, form);
                assert_eq!(plan.dispatches[0].key, key, "the form the tuning gives");
            }
            submit(&gpu, &plan);
            let got = read_back_f32(&gpu, &out, want.len()).block_on().unwrap();
            let e = nmse(&got, &want);
            let label = format!("{cache_type:?} {kernel} {shape:?} sinks {with_sinks}");
            // On the matrix cores queries, keys, values and weights are rounded to f16.
            let bound = match form.and_then(|f| f.rounding()) {
                Some(_) => 1e-5,
                None => 1e-9,
            };
            assert!(e < bound, "{label}: nmse {e}");
            eprintln!("{label}: nmse {e:.1e}");
        }
    }
    gpu.set_tuning(Tuning::default());
    match on_cores {
        0 => eprintln!("attention on matrix cores: skipped, the adapter has none Wick can use"),
        n => eprintln!("attention on matrix cores: checked, {n} forms"),
    }
}

/// The check before the tuner offers a prompt's attention on the matrix cores
/// (`attention_check::matrix_attention_works`: each form it would offer against the CPU) passes
/// where they work, as `tiled_attention_against_cpu` finds they do; where the adapter has none,
/// there is nothing to check.
#[test]
fn matrix_attention_check_passes_where_there_are_some() {
    let Some(gpu) = gpu() else { return };
    let works = wick::ops::attention_check::matrix_attention_works(&gpu)
        .block_on()
        .unwrap();
    assert!(works, "{}", gpu.describe());
    match gpu.matrix_cores() {
        Some(_) => eprintln!("attention on matrix cores: the check passed"),
        None => eprintln!("attention on matrix cores: no check, the adapter has none"),
    }
}

//! The kernels DeepSeek-V2's attention adds, against CPU references on seeded random data: matvecs
//! over per-head groups of rows, and Multi-head Latent Attention (its cache write with YaRN RoPE,
//! then attention) in absorbed form against the naive, decompressed form.

use crate::common;

use common::attention::{cache_buffer, read_cache, stored};
use common::{f32_buffer, gpu, matrix_cores_only, nmse, packed, plan_at, run, RandomFile, Rng};
use pollster::FutureExt as _;
use wick::gguf::GgmlType;
use wick::gpu::{largest_query_tile, KvType, MatvecShape, Offers, Rounding, Tuning};
use wick::gpu::{read_back_f32, scratch_buffer, AttentionForm, Gpu, Kernel, MatrixCores};
use wick::gpu::{GpuTensor, Plan, Segment, Stacked, StepInput};
use wick::ops::matvec::Input;
use wick::ops::mla::{self, Mla};
use wick::ops::rms_norm::RmsNorm;
use wick::ops::rope::{Rope, Yarn};
use wick::ops::{matvec, rms_norm};

/// Per-head matrices over each head's slice of x, split into parts (50 rows each, so a part boundary
/// falls inside a head): one token by the matvec kernel, a run of 19 tokens (two token tiles, the
/// second partial) by the grouped matmul, and a run of 70 in every tile the tuner may give it (each
/// size's last tile of tokens partial).
#[test]
fn grouped_matvec_reads_each_groups_x() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(5);
    // 3 heads of 40 rows of 64 weights; head h reads x from float 72 h (a q with rope parts between).
    let (heads, rows, cols, stride) = (3u32, 40u32, 64u32, 72u32);
    let ty = GgmlType::Q8_0;
    let (w, deq) = packed(&gpu, ty, heads * rows, cols, 68 * 50, &mut rng);
    assert!(w.parts.len() > 1);
    let shape = MatvecShape::chunk(Kernel::MatmulGrouped, ty, (cols, rows), heads, 70);
    // Tiles held in f16 among them, as on GPUs.
    gpu.set_rounds(Rounding::F16Tiles, true);
    let tiles = (shape.candidates(gpu.offers()).into_iter())
        .filter(|tile| shape.fits(tile, &gpu.limits))
        .map(|tile| (70, Some(tile)));
    for (n_tokens, tile) in [(1usize, None), (19, None)].into_iter().chain(tiles) {
        let mut tuning = Tuning::default();
        tuning.matvec.extend(tile.map(|tile| (shape.key(), tile)));
        gpu.set_tuning(tuning);
        let x = rng.vec(n_tokens * (heads * stride) as usize);
        let y = scratch_buffer(&gpu, "y", (n_tokens as u32 * heads * rows) as u64 * 4)
            .block_on()
            .unwrap();
        let mut plan = plan_at(&gpu, 0, &vec![0; n_tokens]);
        let xb = f32_buffer(&gpu, &x);
        matvec::push_grouped(&mut plan, &w, &xb, &y, false, rows, stride);
        run(&gpu, plan);
        let (r, c, s) = (rows as usize, cols as usize, stride as usize);
        let mut want = vec![0f32; n_tokens * heads as usize * r];
        for (t, want) in want.chunks_mut(heads as usize * r).enumerate() {
            let x = &x[t * heads as usize * s..];
            for h in 0..heads as usize {
                matvec::reference(
                    &deq[h * r * c..(h + 1) * r * c],
                    &x[h * s..h * s + c],
                    &mut want[h * r..(h + 1) * r],
                    false,
                );
            }
        }
        let e = nmse(
            &read_back_f32(&gpu, &y, want.len()).block_on().unwrap(),
            &want,
        );
        // A tile in f16 rounds x and the weights to f16 (tests/ops_matmul.rs).
        let bound = match tile.is_some_and(|t| t.rounds_to_f16()) {
            true => 1e-5,
            false => 1e-10,
        };
        assert!(e < bound, "{n_tokens} tokens, {tile:?}: nmse {e}");
    }
    gpu.set_tuning(Tuning::default());
}

/// The query's first matrix and the compressed kv's stacked into one product whose rows go to two
/// outputs (`matvec::push_apart`): 36 rows of one and 20 of the other, one type, uploaded in parts of
/// 24 rows so that a part holds rows of both; then of two types, a product each. One token, three
/// (a step's pair kernel) and 70 (the prompt's tile), x as it is and normed on the way in (as a
/// GPU's plan folds the layer's norm in), against the CPU.
#[test]
fn stacked_products_store_their_rows_apart() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(36);
    let (first, second, cols) = (36u32, 20u32, 256u32);
    for types in [[GgmlType::Q4_K; 2], [GgmlType::Q8_0, GgmlType::Q4_K]] {
        let f = RandomFile::new(
            &[(types[0], first, cols), (types[1], second, cols)],
            &mut rng,
        );
        let upload = |infos: &[&wick::gguf::TensorInfo]| {
            let part = types[0].bytes_for(cols as u64).unwrap() * 24;
            GpuTensor::upload_stacked(&gpu, &f.header, &f.source, infos, part, &mut |_| {})
                .block_on()
                .unwrap()
        };
        let tensors = match types[0] == types[1] {
            true => vec![(upload(&[f.info(0), f.info(1)]), 0)],
            false => vec![(upload(&[f.info(0)]), 0), (upload(&[f.info(1)]), first)],
        };
        // A part of the stack of one type holds rows of both matrices.
        let parts: Vec<u32> = tensors[0].0.parts.iter().map(|p| p.rows).collect();
        let want: &[u32] = match tensors.len() {
            1 => &[24, 24, 8],
            _ => &[24, 12],
        };
        assert_eq!(parts, want);
        let stack = Stacked {
            tensors,
            rows: first + second,
        };
        let gain = rng.vec(cols as usize);
        for (n_tokens, normed) in [1usize, 3, 70]
            .into_iter()
            .flat_map(|n| [(n, false), (n, true)])
        {
            let x = rng.vec(n_tokens * cols as usize);
            let rows = |label: &str, n: u32| {
                scratch_buffer(&gpu, label, (n_tokens as u32 * n) as u64 * 4)
                    .block_on()
                    .unwrap()
            };
            let (y0, y1, xn) = (rows("y0", first), rows("y1", second), rows("xn", cols));
            let (xb, gb) = (f32_buffer(&gpu, &x), f32_buffer(&gpu, &gain));
            let input = match normed {
                true => Input::RmsNorm(RmsNorm {
                    x: &xb,
                    gain: &gb,
                    xn: &xn,
                    n: cols,
                    eps: 1e-6,
                }),
                false => Input::Rows(&xb),
            };
            let mut plan = plan_at(&gpu, 0, &vec![0; n_tokens]);
            matvec::push_apart(&mut plan, &stack, input, [&y0, &y1], first);
            run(&gpu, plan);
            let read = |b: &wgpu::Buffer, n: u32| {
                read_back_f32(&gpu, b, n_tokens * n as usize)
                    .block_on()
                    .unwrap()
            };
            let (got0, got1) = (read(&y0, first), read(&y1, second));
            for t in 0..n_tokens {
                let x = &x[t * cols as usize..(t + 1) * cols as usize];
                let x = match normed {
                    true => rms_norm::reference(x, &gain, 1e-6),
                    false => x.to_vec(),
                };
                for (m, (got, rows)) in [(&got0, first), (&got1, second)].into_iter().enumerate() {
                    let mut want = vec![0f32; rows as usize];
                    matvec::reference(&f.deq[m], &x, &mut want, false);
                    let got = &got[t * rows as usize..(t + 1) * rows as usize];
                    let e = nmse(got, &want);
                    assert!(
                        e < 1e-9,
                        "{types:?}, {n_tokens} tokens, normed {normed}: matrix {m}, token {t}: nmse {e}"
                    );
                }
            }
        }
    }
}

/// How a test run attends: a step's tokens (a workgroup each), a prompt's chunk in a form of its
/// shape, or a step's tokens split over their keys this many ways in a form of its shape.
#[derive(Clone, Copy, Debug)]
enum Run {
    Step,
    Chunk(AttentionForm),
    Split(u32, AttentionForm),
}

impl Run {
    fn on_matrix_cores(&self) -> bool {
        match self {
            Run::Chunk(form) | Run::Split(_, form) => form.rounding().is_some(),
            Run::Step => false,
        }
    }
}

/// The forms of a run's attention (a chunk's, or a step's split `splits` ways) the tuner may give
/// `m` on `gpu` or on a GPU with its workgroup memory (a chunk's streaming form at every count of
/// tokens a workgroup, which a CPU adapter is offered one of; on lavapipe with matrix cores, which
/// advertises 8 x 8 products and runs the 16 x 16 ones GPUs take, those too); where only the matrix
/// cores' are asked for (scripts/test-matrix-cores.sh), those alone.
fn forms(gpu: &Gpu, m: &Mla, tokens: u32, splits: Option<u32>) -> Vec<AttentionForm> {
    let shape = mla::attention_shape(m, tokens, splits);
    let mut forms = shape.candidates(gpu.offers(), gpu.adapter());
    if splits.is_none() {
        let most = largest_query_tile(gpu.adapter().workgroup_bytes);
        let streaming = (1..=most).map(|tokens| AttentionForm::Latent { tokens });
        let missing: Vec<_> = streaming.filter(|f| !forms.contains(f)).collect();
        forms.extend(missing);
    }
    let lavapipe = (gpu.matrix_cores()).filter(|_| gpu.info.name.contains("llvmpipe"));
    if let Some(cores) = lavapipe {
        let sixteen = MatrixCores {
            size: 16,
            lanes: cores.lanes.max(16),
        };
        let offers = Offers {
            matrix_cores: Some(sixteen),
            ..gpu.offers()
        };
        let on_cores = shape.candidates(offers, gpu.adapter()).into_iter();
        forms.extend(on_cores.filter(|f| f.rounding().is_some()));
    }
    forms.retain(|f| !matrix_cores_only() || f.rounding().is_some());
    forms
}

/// The cache write (norm + YaRN rope), then absorbed attention and v_b on the GPU for a step of three
/// tokens and a prompt's run of eleven, against the naive form on the CPU, causal: every head's keys
/// and values decompressed from the latent cache up to each token's own position. The run of eleven
/// in every form the tuner may give it: the streaming form at each size of its tile of tokens, and
/// on the matrix cores each tile of keys (66 rows of (token, head) over workgroups of 8 or 16, the
/// last partly filled, most across two tokens), with scores scaled up so that rows meet a larger max
/// in a later tile and their outputs are rescaled. Then one token deep into the cache with its keys
/// split 5 ways and merged, and a step of three such tokens (a speculative check's), each split over
/// its own keys, in every form: streaming (blocks of 128 keys: three splits used, the last partly,
/// two empty) and on the matrix cores (whole tiles a split, each token's 6 heads a workgroup of 8 or
/// 16 rows). 6 heads: a workgroup's group of 4 and one of 2. Over an f32 cache and an f16 one.
/// Chunks of two prompts read together too, each at its own rows of the cache, their rows a few
/// apart (a block or tile of keys from the first reaches into the second's, which it must not count
/// for them) and far apart (the walk skips the rows between): workgroups at the boundary hold
/// tokens of both.
#[test]
fn absorbed_mla_equals_the_naive_form() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(23);
    let (n_head, kv_lora, q_nope, n_rot, v_dim) = (6u32, 64u32, 32u32, 16u32, 24u32);
    let shape = |rope, scale, cache| Mla {
        n_head,
        kv_lora,
        q_nope,
        v_dim,
        rope,
        scale,
        cache,
    };
    let rope = |neox| Rope {
        n_rot,
        freq_base: 10000.0,
        freq_scale: 0.25,
        neox,
        yarn: Some(Yarn::new(n_rot, 10000.0, 64, 0.9)),
        sections: None,
    };
    let m = shape(rope(false), 1.0, KvType::F32);
    // A run's sequences: (the cache row of its position 0, the position it goes on from, tokens).
    type Sequences = &'static [(u32, u32, usize)];
    const CHUNK: Sequences = &[(0, 29, 11)];
    const TWO_NEAR: Sequences = &[(0, 29, 3), (40, 100, 8)];
    const TWO_FAR: Sequences = &[(0, 29, 5), (200, 6, 6)];
    const DEEP: Sequences = &[(0, 300, 1)];
    const DEEP_CHECK: Sequences = &[(0, 300, 3)];
    let chunks = forms(&gpu, &m, 11, None).into_iter().flat_map(|form| {
        [
            (false, CHUNK, Run::Chunk(form)),
            (true, CHUNK, Run::Chunk(form)),
            (false, TWO_NEAR, Run::Chunk(form)),
            (true, TWO_FAR, Run::Chunk(form)),
        ]
    });
    let splits = forms(&gpu, &m, 3, Some(5)).into_iter().flat_map(|form| {
        [
            (false, DEEP, Run::Split(5, form)),
            (true, DEEP, Run::Split(5, form)),
            (true, DEEP_CHECK, Run::Split(5, form)),
        ]
    });
    let step: Sequences = &[(0, 29, 3)];
    let steps = [(false, step, Run::Step), (true, step, Run::Step)];
    let runs: Vec<_> = (steps.into_iter().chain(splits).chain(chunks))
        .filter(|(_, _, run)| !matrix_cores_only() || run.on_matrix_cores())
        .collect();
    let on_cores = runs
        .iter()
        .filter(|(_, _, run)| run.on_matrix_cores())
        .count();
    let runs = [KvType::F32, KvType::F16]
        .into_iter()
        .flat_map(|cache| runs.iter().map(move |&run| (cache, run)));
    for (cache_type, (neox, sequences, how)) in runs {
        let split = match how {
            Run::Split(n, _) => Some(n),
            Run::Step | Run::Chunk(_) => None,
        };
        let n_ctx = 320u32;
        let n_tokens: usize = sequences.iter().map(|s| s.2).sum();
        // Each token's (cache row, position, its sequence's row of position 0).
        let places: Vec<(u32, u32, u32)> = (sequences.iter())
            .flat_map(|&(base, pos, n)| (pos..pos + n as u32).map(move |p| (base + p, p, base)))
            .collect();
        let rope = rope(neox);
        // On the matrix cores, scores large enough that a later tile's max passes a row's by more
        // than the kernel lets its weights grow before it rescales the outputs.
        let scale = match how.on_matrix_cores() {
            true => 2.0,
            false => 0.3,
        };
        let m = shape(rope, scale, cache_type);
        let width = m.cache_width() as usize;
        let q_dim = (n_head * m.q_stride()) as usize;
        // The cache before: each sequence's rows before its position already normed and rotated
        // (random, as the cache holds them), the rest zero.
        let mut cache = vec![0f32; n_ctx as usize * width];
        for &(base, pos, _) in sequences {
            for v in &mut cache[base as usize * width..(base + pos) as usize * width] {
                *v = rng.f32();
            }
        }
        let mut cache = stored(&cache, cache_type);
        let kv = rng.vec(n_tokens * width);
        let norm = rng.vec(kv_lora as usize);
        let q = rng.vec(n_tokens * q_dim);
        let (k_b, k_b_deq) = packed(
            &gpu,
            GgmlType::F16,
            n_head * kv_lora,
            q_nope,
            1 << 20,
            &mut rng,
        );
        let (v_b, v_b_deq) = packed(
            &gpu,
            GgmlType::Q8_0,
            n_head * v_dim,
            kv_lora,
            1 << 20,
            &mut rng,
        );

        let cache_buffer = cache_buffer(&gpu, &cache, cache_type);
        let q_buffer = f32_buffer(&gpu, &q);
        let rows = |label: &str, n: u32| {
            scratch_buffer(&gpu, label, (n_tokens as u32 * n) as u64 * 4)
                .block_on()
                .unwrap()
        };
        let q_latent = rows("q_latent", n_head * kv_lora);
        let latent_out = rows("latent_out", n_head * kv_lora);
        let out = rows("out", n_head * v_dim);
        let ids = vec![0; n_tokens];
        let segments: Vec<Segment> = (sequences.iter())
            .scan(0, |taken, &(base, pos, n)| {
                *taken += n;
                Some(Segment::new(base, pos, &ids[*taken - n..*taken]))
            })
            .collect();
        let step = StepInput::new(&gpu, n_tokens as u32);
        step.write_segments(&gpu, &segments, 0);
        let mut plan = Plan::new(&gpu, &step, n_tokens as u32);
        let freqs = m.rope.freqs_buffer(&gpu, None);
        mla::push_kv(
            &mut plan,
            &m,
            &f32_buffer(&gpu, &kv),
            (&f32_buffer(&gpu, &norm), 1e-6),
            &freqs,
            &cache_buffer,
        );
        matvec::push_grouped(
            &mut plan,
            &k_b,
            &q_buffer,
            &q_latent,
            false,
            kv_lora,
            m.q_stride(),
        );
        let b = mla::AttentionBuffers {
            q_latent: &q_latent,
            q: &q_buffer,
            cache: &cache_buffer,
            freqs: &freqs,
            out: &latent_out,
        };
        let parts = split.map(|n_split| {
            let tokens = n_tokens as u32;
            let bytes = wick::ops::attention::split_scratch_bytes(tokens, n_head, kv_lora, n_split);
            scratch_buffer(&gpu, "parts", bytes).block_on().unwrap()
        });
        match (how, parts.as_ref()) {
            (Run::Split(n_split, form), Some(parts)) => {
                mla::push_split_in(&mut plan, &m, &b, (n_split, parts), form)
            }
            (Run::Chunk(form), _) => mla::push_chunk_in(&mut plan, &m, &b, form),
            _ => mla::push_attention(&mut plan, &m, &b),
        }
        matvec::push_grouped(&mut plan, &v_b, &latent_out, &out, false, v_dim, kv_lora);
        run(&gpu, plan);

        // CPU: the cache rows, each token's rotated query, the naive attention up to its position.
        let l = kv_lora as usize;
        let got_out = read_back_f32(&gpu, &out, n_tokens * (n_head * v_dim) as usize)
            .block_on()
            .unwrap();
        for (t, &(at_row, at_pos, _)) in places.iter().enumerate() {
            let kv_t = &kv[t * width..(t + 1) * width];
            let mut row = rms_norm::reference(&kv_t[..l], &norm, 1e-6);
            let mut pe = kv_t[l..].to_vec();
            rope.reference(&mut pe, at_pos, None);
            row.extend(pe);
            let at = at_row as usize * width;
            cache[at..at + width].copy_from_slice(&row);
        }
        let got_cache = read_cache(&gpu, &cache_buffer, cache.len(), cache_type);
        // An f16 cache rounds each value to 11 bits.
        let bound = match cache_type {
            KvType::F32 => 1e-10,
            KvType::F16 => 1e-6,
        };
        let e = nmse(&got_cache, &cache);
        assert!(
            e < bound,
            "{cache_type:?} neox={neox}, {sequences:?}, {how:?}: cache rows nmse {e}"
        );
        // Attention is held to the cache the GPU wrote.
        cache = got_cache;
        // The matrix cores round the scaled queries and the cache rows to f16, which moves a
        // score by up to a few hundredths at these scales: their latent output is held to the
        // absorbed form with the same rounding, tightly (the end-to-end check below, against f32,
        // loosely).
        if how.on_matrix_cores() {
            let latent = (n_head * kv_lora) as usize;
            let read = |b: &wgpu::Buffer| {
                read_back_f32(&gpu, b, n_tokens * latent)
                    .block_on()
                    .unwrap()
            };
            let q_latent = read(&q_latent);
            let mut want = Vec::new();
            let mut taken = 0;
            for &(base, pos, n) in sequences {
                let (ql, qs) = (&q_latent[taken * latent..], &q[taken * q_dim..]);
                let rows = &cache[base as usize * width..];
                want.extend(absorbed_in_f16(
                    &m,
                    &ql[..n * latent],
                    &qs[..n * q_dim],
                    rows,
                    (pos, n),
                ));
                taken += n;
            }
            let e = nmse(&read(&latent_out), &want);
            assert!(
                e < 1e-6,
                "{cache_type:?} neox={neox}, {sequences:?}, {how:?}: latent output nmse {e}"
            );
        }
        for (t, &(at_row, at_pos, base)) in places.iter().enumerate() {
            let mut q_rot = q[t * q_dim..(t + 1) * q_dim].to_vec();
            for h in q_rot.chunks_mut(m.q_stride() as usize) {
                rope.reference(&mut h[q_nope as usize..], at_pos, None);
            }
            let keys = &cache[base as usize * width..(at_row as usize + 1) * width];
            let want = mla::reference_naive(&m, &q_rot, keys, &k_b_deq, &v_b_deq);
            let got = &got_out[t * want.len()..(t + 1) * want.len()];
            let e = nmse(got, &want);
            // On the matrix cores queries, keys, values and weights are rounded to f16.
            let bound = match how.on_matrix_cores() {
                true => 1e-4,
                false => 1e-9,
            };
            assert!(
                e < bound,
                "{cache_type:?} neox={neox}, token {t} of {sequences:?}, {how:?}: attention nmse {e}"
            );
        }
    }
    match on_cores {
        0 => eprintln!("mla attention on matrix cores: skipped, the adapter has none Wick can use"),
        n => eprintln!("mla attention on matrix cores: checked, {n} runs of its forms"),
    }
}

/// The check before the tuner offers MLA's chunk on the matrix cores
/// (`attention_check::matrix_latent_attention_works`: each form it would offer, at DeepSeek-V2's
/// widths, against the CPU) passes where they work, as `absorbed_mla_equals_the_naive_form` finds
/// they do; where the adapter has none, there is nothing to check.
#[test]
fn matrix_latent_attention_check_passes_where_there_are_some() {
    let Some(gpu) = gpu() else { return };
    let works = wick::ops::attention_check::matrix_latent_attention_works(&gpu)
        .block_on()
        .unwrap();
    assert!(works, "{}", gpu.describe());
    match gpu.matrix_cores() {
        Some(_) => eprintln!("mla attention on matrix cores: the check passed"),
        None => eprintln!("mla attention on matrix cores: no check, the adapter has none"),
    }
}

/// Each (token, head)'s latent attention output as the matrix cores' form computes it, for a run of
/// `n_tokens` from `pos`: the absorbed form, each head's query its no-rope part in the latent space
/// (`q_latent`, from the GPU's grouped product, checked above) and its rope part rotated, times the
/// scale, over the cache rows up to its own; queries and cache rows rounded to f16, the rest f32.
fn absorbed_in_f16(
    m: &Mla,
    q_latent: &[f32],
    q: &[f32],
    cache: &[f32],
    (pos, n_tokens): (u32, usize),
) -> Vec<f32> {
    let f16 = |v: f32| half::f16::from_f32(v).to_f32();
    let (l, stride, heads) = (m.kv_lora as usize, m.q_stride() as usize, m.n_head as usize);
    let cache: Vec<f32> = cache.iter().map(|&v| f16(v)).collect();
    let mut queries = Vec::with_capacity(n_tokens * heads * m.cache_width() as usize);
    for row in 0..n_tokens * heads {
        let mut rope = q[row * stride + m.q_nope as usize..][..m.rope.n_rot as usize].to_vec();
        m.rope
            .reference(&mut rope, pos + (row / heads) as u32, None);
        let query = q_latent[row * l..][..l].iter().chain(&rope);
        queries.extend(query.map(|&v| f16(v * m.scale)));
    }
    mla::reference_absorbed(m, &queries, &cache, pos as usize)
}

//! The kernels DeepSeek-V2's attention adds, against CPU references on seeded random data: matvecs
//! over per-head groups of rows, and Multi-head Latent Attention (its cache write with YaRN RoPE,
//! then attention) in absorbed form against the naive, decompressed form.

mod common;

use common::{f32_buffer, gpu, nmse, packed, plan_at, run, Rng};
use pollster::FutureExt as _;
use wick::gguf::GgmlType;
use wick::gpu::{read_back_f32, scratch_buffer, Kernel, MatvecShape, Rounding, Tuning};
use wick::ops::mla::{self, Mla};
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

/// The cache write (norm + YaRN rope), then absorbed attention and v_b on the GPU for a step of three
/// tokens and a prompt's run of eleven, against the naive form on the CPU, causal: every head's keys
/// and values decompressed from the latent cache up to each token's own position. Then one token deep
/// into the cache with its keys split 5 ways (blocks of 128 keys: three splits used, the last partly,
/// two empty) and merged, and a step of three such tokens (a speculative check's), each split over
/// its own keys. 6 heads: a workgroup's group of 4 and one of 2.
#[test]
fn absorbed_mla_equals_the_naive_form() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(23);
    let (n_head, kv_lora, q_nope, n_rot, v_dim) = (6u32, 64u32, 32u32, 16u32, 24u32);
    // A step's 3 tokens, a token a workgroup; a prompt's 11, in tiles of every size the adapter's
    // workgroup memory allows; a step's one token split, and its three.
    let tiles = mla::largest_query_tile(gpu.limits.max_compute_workgroup_storage_size);
    let runs = (1..=tiles).flat_map(|tile| [(false, 11usize, tile, None), (true, 11, tile, None)]);
    let steps = [(false, 3usize, 1u32, None), (true, 3, 1, None)];
    let splits = [
        (false, 1, 1, Some(5u32)),
        (true, 1, 1, Some(5)),
        (true, 3, 1, Some(5)),
    ];
    for (neox, n_tokens, tile, split) in steps.into_iter().chain(runs).chain(splits) {
        let (pos, n_ctx) = match split {
            None => (29u32, 40u32),
            Some(_) => (300, 320),
        };
        let rope = Rope {
            n_rot,
            freq_base: 10000.0,
            freq_scale: 0.25,
            neox,
            yarn: Some(Yarn::new(n_rot, 10000.0, 64, 0.9)),
            sections: None,
        };
        let m = Mla {
            n_head,
            kv_lora,
            q_nope,
            v_dim,
            rope,
            scale: 0.3,
        };
        let width = m.cache_width() as usize;
        let q_dim = (n_head * m.q_stride()) as usize;
        // The cache before: rows < pos already normed and rotated (random), the rest zero.
        let mut cache = vec![0f32; n_ctx as usize * width];
        for v in &mut cache[..pos as usize * width] {
            *v = rng.f32();
        }
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

        let cache_buffer = f32_buffer(&gpu, &cache);
        let q_buffer = f32_buffer(&gpu, &q);
        let rows = |label: &str, n: u32| {
            scratch_buffer(&gpu, label, (n_tokens as u32 * n) as u64 * 4)
                .block_on()
                .unwrap()
        };
        let q_latent = rows("q_latent", n_head * kv_lora);
        let latent_out = rows("latent_out", n_head * kv_lora);
        let out = rows("out", n_head * v_dim);
        let mut plan = plan_at(&gpu, pos, &vec![0; n_tokens]);
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
        match split.zip(parts.as_ref()) {
            Some((n_split, parts)) => mla::push_attention_split(&mut plan, &m, &b, n_split, parts),
            None => mla::push_attention_tiled(&mut plan, &m, &b, tile),
        }
        matvec::push_grouped(&mut plan, &v_b, &latent_out, &out, false, v_dim, kv_lora);
        run(&gpu, plan);

        // CPU: the cache rows, each token's rotated query, the naive attention up to its position.
        let l = kv_lora as usize;
        let got_out = read_back_f32(&gpu, &out, n_tokens * (n_head * v_dim) as usize)
            .block_on()
            .unwrap();
        for t in 0..n_tokens {
            let at_pos = pos + t as u32;
            let kv_t = &kv[t * width..(t + 1) * width];
            let mut row = rms_norm::reference(&kv_t[..l], &norm, 1e-6);
            let mut pe = kv_t[l..].to_vec();
            rope.reference(&mut pe, at_pos, None);
            row.extend(pe);
            let at = at_pos as usize * width;
            cache[at..at + width].copy_from_slice(&row);
        }
        let got_cache = read_back_f32(&gpu, &cache_buffer, cache.len())
            .block_on()
            .unwrap();
        assert!(
            nmse(&got_cache, &cache) < 1e-10,
            "neox={neox}, {n_tokens} tokens by {tile}: cache rows"
        );
        for t in 0..n_tokens {
            let at_pos = pos + t as u32;
            let mut q_rot = q[t * q_dim..(t + 1) * q_dim].to_vec();
            for h in q_rot.chunks_mut(m.q_stride() as usize) {
                rope.reference(&mut h[q_nope as usize..], at_pos, None);
            }
            let end = (at_pos as usize + 1) * width;
            let want = mla::reference_naive(&m, &q_rot, &cache[..end], &k_b_deq, &v_b_deq);
            let got = &got_out[t * want.len()..(t + 1) * want.len()];
            let e = nmse(got, &want);
            assert!(
                e < 1e-9,
                "neox={neox}, token {t} of {n_tokens} by {tile}, split {split:?}: attention nmse {e}"
            );
        }
    }
}

//! A decode step's attention against its CPU reference on seeded random data: split over each
//! token's keys in every form the adapter offers (windows, soft-capping, sinks), and the whole-head
//! kernel, for one token and for a speculative check's consecutive tokens beside other sequences'.

use crate::common;

use common::attention::{attention_reference_from, cache_buffer, stored};
use common::{f32_buffer, gpu, nmse, submit, Rng};
use pollster::FutureExt as _;
use wick::gpu::{
    read_back_f32, scratch_buffer, AttentionForm, AttentionShape, Choice, KvType, PipelineKey,
    Plan, Segment, StepInput, Tunable, Tuning,
};
use wick::ops::attention;

/// A step's attention split over each token's keys and merged (flash-decoding), against the CPU, in
/// every form the adapter offers the split (a key a thread; a head over the lanes of a subgroup
/// where it has them): one token at position 0 (one key, four splits empty), 150 (three splits used,
/// the last partly) and 600 (all five, several rounds of keys each); then at 600 again on a
/// sliding-window layer (the last 300 keys, and the last 37, which leaves four splits empty) scored
/// by Gemma 3 27B's scale, then with scores soft-capped at 2 (Gemma 2); then with sinks (gpt-oss: a
/// logit per head in the softmax, with no value) at position 0, where the one key shares the weight
/// with the sink, and at 600 on a window of 37; and through the whole-head kernel alike. 5 query
/// heads a kv head (a group of 4 and one of 1) of 64 dimensions; then 3 a kv head (a group of 3) of
/// 128, 7 splits. Then steps of several tokens: a speculative check's 3 consecutive tokens (each
/// sees its own key and those before, not the next ones) beside another sequence's token at rows of
/// its own (parallel requests), at depths that split the keys unevenly between them; and a check of
/// 6 after another sequence's token, which a workgroup that takes several of a sequence's tokens
/// at once (the split lanes form in a plan of several) takes in pieces.
#[test]
fn split_attention_against_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Rng(1234);
    let n_ctx = 1280u32;
    let whole = attention::Shape::causal(10, 2, 64);
    let windowed = |window| attention::Shape {
        scale: 1.0 / 168f32.sqrt(),
        window,
        ..whole
    };
    let capped = attention::Shape {
        softcap: 2.0,
        ..windowed(300)
    };
    let wide = attention::Shape::causal(6, 2, 128);
    let wide_capped = attention::Shape {
        softcap: 2.0,
        ..wide
    };
    // (base, position, tokens) of each sequence of the step.
    let one = |pos: u32| vec![(0u32, pos, 1u32)];
    let check_beside = |pos: u32, other: u32| vec![(0u32, pos, 3u32), (640, other, 1)];
    let check_after = |other: u32, pos: u32| vec![(640u32, other, 1u32), (0, pos, 6)];
    let cases = [
        (one(0), whole, false, 5u32),
        (one(150), whole, false, 5),
        (one(600), whole, false, 5),
        (one(600), windowed(300), false, 5),
        (one(600), windowed(37), false, 5),
        (one(600), capped, false, 5),
        (one(0), whole, true, 5),
        (one(600), windowed(37), true, 5),
        (one(600), wide, false, 7),
        (one(333), wide_capped, true, 7),
        (check_beside(597, 0), whole, true, 5),
        (check_beside(148, 599), windowed(37), false, 5),
        (check_beside(330, 20), wide_capped, true, 7),
        (check_after(20, 597), whole, false, 5),
        (check_after(599, 148), windowed(37), true, 5),
        (check_after(0, 330), wide_capped, false, 7),
    ];
    let with_types = [KvType::F32, KvType::F16]
        .into_iter()
        .flat_map(|kv| cases.iter().map(move |case| (kv, case.clone())));
    let mut forms_run = std::collections::BTreeSet::new();
    for (cache_type, (sequences, shape, with_sinks, n_split)) in with_types {
        let (n_head, n_kv_head, head_dim) = (shape.n_head, shape.n_kv_head, shape.head_dim);
        let kv_dim = (n_kv_head * head_dim) as usize;
        let hd = head_dim as usize;
        let n_tokens: u32 = sequences.iter().map(|s| s.2).sum();
        let sinks: Option<Vec<f32>> =
            with_sinks.then(|| rng.vec(n_head as usize).iter().map(|v| v * 3.0).collect());
        let sinks_buffer = sinks.as_ref().map(|s| f32_buffer(&gpu, s));
        let q: Vec<f32> = rng
            .vec(hd * (n_head * n_tokens) as usize)
            .iter()
            .map(|v| v * 4.0)
            .collect();
        // Each sequence's rows are filled up to its last token's; the rows past them hold zeros.
        let mut kc = vec![0f32; n_ctx as usize * kv_dim];
        let mut vc = vec![0f32; n_ctx as usize * kv_dim];
        for &(base, pos, tokens) in &sequences {
            for i in base as usize * kv_dim..(base + pos + tokens) as usize * kv_dim {
                kc[i] = rng.f32();
                vc[i] = rng.f32();
            }
        }
        let (kc, vc) = (stored(&kc, cache_type), stored(&vc, cache_type));
        let (qb, kcb, vcb) = (
            f32_buffer(&gpu, &q),
            cache_buffer(&gpu, &kc, cache_type),
            cache_buffer(&gpu, &vc, cache_type),
        );
        let heads = (n_head as usize, n_kv_head as usize, hd);
        let scoring = (shape.scale, shape.softcap);
        // Each token's heads over its own sequence's rows up to its own.
        let token_rows = (sequences.iter())
            .flat_map(|&(base, pos, tokens)| (pos..pos + tokens).map(move |p| (base, p)));
        let q_rows = q.chunks(hd * n_head as usize);
        let want: Vec<f32> = (token_rows.zip(q_rows))
            .flat_map(|((base, p), q)| {
                let (base, n) = (base as usize, p as usize + 1);
                let first = match shape.window {
                    0 => 0,
                    w => n.saturating_sub(w as usize),
                };
                let rows = (base + first, base + n);
                attention_reference_from(q, (&kc, &vc), rows, heads, scoring, sinks.as_deref())
            })
            .collect();
        let label = format!(
            "{cache_type:?} {n_head}x{head_dim} kv{n_kv_head} sequences {sequences:?} window {} \
             softcap {} sinks {with_sinks}",
            shape.window, shape.softcap
        );

        let split = AttentionShape {
            heads: n_head,
            kv_heads: n_kv_head,
            head_dim,
            tokens: n_tokens,
            cache: cache_type,
            splits: Some(n_split),
            latent: None,
        };
        let step = StepInput::new(&gpu, n_tokens);
        let ids: Vec<u32> = vec![0; n_tokens as usize];
        let mut ids = &ids[..];
        let segments: Vec<Segment> = (sequences.iter())
            .map(|&(base, pos, tokens)| {
                let (these, rest) = ids.split_at(tokens as usize);
                ids = rest;
                Segment::new(base, pos, these)
            })
            .collect();
        step.write_segments(&gpu, &segments, 0);
        // Each split form, then the whole-head kernel as a GPU runs it (a check's tokens taken by
        // one workgroup) and as a CPU adapter does (a token a workgroup).
        let forms = split.candidates(gpu.offers(), gpu.adapter()).into_iter();
        let whole_head = [Run::Whole { on_gpu: true }, Run::Whole { on_gpu: false }];
        for run in forms.map(Run::Split).chain(whole_head) {
            // Plans take the GPU's tuning when made.
            let mut tuning = Tuning::default();
            if let Run::Split(form) = run {
                tuning.insert(&Tunable::Attention(split), Choice::Attention(form));
            }
            gpu.set_tuning(tuning);
            let out = scratch_buffer(&gpu, "out", q.len() as u64 * 4)
                .block_on()
                .unwrap();
            let b = attention::AttentionBuffers {
                q: &qb,
                k_cache: &kcb,
                v_cache: &vcb,
                cache_type,
                out: &out,
                sinks: sinks_buffer.as_ref(),
            };
            let mut plan = Plan::new(&gpu, &step, n_tokens);
            match run {
                Run::Split(form) => {
                    let bytes = attention::split_scratch_bytes(n_tokens, n_head, head_dim, n_split);
                    let parts = scratch_buffer(&gpu, "parts", bytes).block_on().unwrap();
                    attention::push_split(&mut plan, shape, n_split, &b, &parts);
                    plan.finish(&gpu).block_on().unwrap();
                    let key = PipelineKey::attention(&split, form);
                    assert_eq!(plan.dispatches[0].key, key, "the form the tuning gives");
                    forms_run.insert(form.to_string());
                }
                Run::Whole { on_gpu } => {
                    plan.adapter.runs_on_cpu = !on_gpu;
                    attention::push(&mut plan, shape, &b);
                    plan.finish(&gpu).block_on().unwrap();
                    let together = plan.dispatches[0].key.tokens.is_some();
                    assert_eq!(
                        together,
                        on_gpu && n_tokens > 1,
                        "{label}: a check's tokens"
                    );
                }
            }
            submit(&gpu, &plan);
            gpu.set_tuning(Tuning::default());
            let got = read_back_f32(&gpu, &out, want.len()).block_on().unwrap();
            let e = nmse(&got, &want);
            assert!(e < 1e-9, "{label} {run}: nmse {e}");
        }
    }
    eprintln!("split forms run: {forms_run:?}");
}

/// How a case's attention runs: split in a form, or by the whole-head kernel as a GPU's plan runs
/// it or as a CPU adapter's does.
#[derive(Clone, Copy)]
enum Run {
    Split(AttentionForm),
    Whole { on_gpu: bool },
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Run::Split(form) => write!(f, "split {form}"),
            Run::Whole { on_gpu: true } => write!(f, "whole, a check's tokens together"),
            Run::Whole { on_gpu: false } => write!(f, "whole, a token a workgroup"),
        }
    }
}

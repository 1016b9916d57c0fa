//! Kernel-shape tuning: what `Engine::tune` keeps is one of the candidates, and numbers do not change.

use crate::common;

use common::gpu;
use pollster::FutureExt as _;
use std::sync::Arc;
use wick::engine::{Engine, LoadOptions, TuneShapes, Tuned};
use wick::gguf::FileSource;
use wick::gpu::{Choice, Gpu, Kernel, MatvecKernel, MatvecShape, Tunable};

/// The tiny random-weight llama, one token per run, on `gpu`.
fn load(gpu: &Arc<Gpu>) -> Engine {
    load_file(gpu, "random-llama-chat.gguf")
}

/// A tiny random-weight model of tests/data, one token per run, on `gpu`.
fn load_file(gpu: &Arc<Gpu>, name: &str) -> Engine {
    load_batched(gpu, name, 1)
}

/// A tiny random-weight model of tests/data, runs of up to `batch` tokens, on `gpu`.
fn load_batched(gpu: &Arc<Gpu>, name: &str, batch: u32) -> Engine {
    load_in(gpu, name, batch, 32)
}

/// As `load_batched`, for a context of `n_ctx` tokens.
fn load_in(gpu: &Arc<Gpu>, name: &str, batch: u32, n_ctx: u32) -> Engine {
    load_checking(gpu, name, (batch, n_ctx), 0)
}

/// As `load_in`, with a parallel plan of `check_tokens` rows (a speculative check's).
fn load_checking(
    gpu: &Arc<Gpu>,
    name: &str,
    (batch, n_ctx): (u32, u32),
    check_tokens: u32,
) -> Engine {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let source = FileSource::open(path).unwrap();
    let options = LoadOptions {
        n_ctx,
        batch: Some(batch),
        check_tokens,
        ..Default::default()
    };
    Engine::load(gpu.clone(), &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap()
}

/// The kernels the tuner may choose among for `shape` on `gpu`.
fn candidates(gpu: &Gpu, shape: &Tunable) -> Vec<Choice> {
    match shape {
        Tunable::Matvec(m) => (m.candidates(gpu.offers()).into_iter())
            .map(Choice::Matvec)
            .collect(),
        Tunable::Recurrence(r) => (r.candidates(gpu.adapter().workgroup_bytes).into_iter())
            .map(Choice::Recurrence)
            .collect(),
        Tunable::Attention(a) => (a.candidates(gpu.offers(), gpu.adapter()))
            .into_iter()
            .map(Choice::Attention)
            .collect(),
    }
}

/// A matvec's tuning: its shape and winner.
fn matvec(t: &Tuned) -> Option<(MatvecShape, MatvecKernel)> {
    match (t.shape, t.after.0) {
        (Tunable::Matvec(shape), Choice::Matvec(kernel)) => Some((shape, kernel)),
        _ => None,
    }
}

/// `Engine::tune` times every candidate of each matvec shape with no winner yet and keeps one of
/// them, once per shape; the tuned engine, and a model loaded afterwards on the same GPU, give the
/// same logits as the defaults, up to summation order.
#[test]
fn tuning_keeps_the_numbers() {
    let Some(gpu) = gpu() else { return };
    let prompt = [1u32, 50, 300, 7, 99];
    let mut engine = load(&gpu);
    let want = engine.prefill(&prompt).block_on().unwrap();
    let untuned = engine.untuned_shapes();
    let (tuning, report) = engine.tune(TuneShapes::New).block_on().unwrap();
    let timed: Vec<_> = report.iter().map(|t| t.shape).collect();
    assert_eq!(timed.len(), untuned.len());
    assert!(untuned.iter().all(|s| timed.contains(s)), "{timed:?}");
    // The largest matrices first: a tuning cut short has the winners that matter most.
    assert!(
        timed.windows(2).all(|w| w[0].size() >= w[1].size()),
        "{timed:?}"
    );
    assert!(untuned.len() >= 4, "{untuned:?}"); // q/k/v, output, gate/up, down, head
    for t in &report {
        assert!(candidates(&gpu, &t.shape).contains(&t.after.0), "{t:?}");
        assert!(t.after.1 <= t.before.1, "{t:?}");
        assert!(tuning.has(&t.shape), "{t:?}");
        assert_eq!(tuning.choice(&t.shape, gpu.adapter()), t.after.0);
    }
    // Once per shape: nothing is left to time, unless every shape is asked for.
    assert!(engine.untuned_shapes().is_empty());
    let (_, again) = engine.tune(TuneShapes::New).block_on().unwrap();
    assert!(again.is_empty());
    let (_, all) = engine.tune(TuneShapes::All).block_on().unwrap();
    assert_eq!(all.len(), report.len());
    gpu.set_tuning(tuning);
    let mut tuned = load(&gpu);
    let got = tuned.prefill(&prompt).block_on().unwrap();
    let diff = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(diff < 1e-3, "tuned logits differ by {diff}");
}

/// A device that will not build the kernels that use subgroups, though the engine is told it has
/// them (as a page says when its device was not granted them, or a driver that cannot compile
/// them): the tuner offers none of them and tunes on, and the numbers stay.
#[test]
fn subgroup_kernels_the_device_will_not_build_are_left_out() {
    let Some(told) = gpu() else { return };
    let Some(lanes) = told.subgroup_size else {
        eprintln!("skipped: this adapter has no subgroups to leave out");
        return;
    };
    drop(told);
    let mut gpu = Gpu::without_features(wgpu::Features::SUBGROUP)
        .block_on()
        .unwrap();
    Arc::get_mut(&mut gpu)
        .expect("a GPU of its own")
        .subgroup_size = Some(lanes);
    let prompt = [1u32, 50, 300, 7, 99, 12, 400, 3];
    let mut engine = load_batched(&gpu, "random-llama-chat.gguf", 64);
    let want = engine.prefill(&prompt).block_on().unwrap();
    let (tuning, report) = engine.tune(TuneShapes::New).block_on().unwrap();
    assert!(!report.is_empty());
    for t in &report {
        let lanes = match t.after.0 {
            Choice::Matvec(k) => k.subgroup_sum,
            Choice::Attention(form) => form.lanes().is_some(),
            Choice::Recurrence(_) => false,
        };
        assert!(!lanes, "a winner on subgroups the device lacks: {t:?}");
    }
    gpu.set_tuning(tuning);
    let mut tuned = load_batched(&gpu, "random-llama-chat.gguf", 64);
    let got = tuned.prefill(&prompt).block_on().unwrap();
    let diff = (got.iter().zip(&want))
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(diff < 1e-3, "tuned logits differ by {diff}");
}

/// Tuning a candidate at a time between decode steps, as the browser's worker does when idle, leaves
/// the conversation as it was: the tokens after it get the logits an untuned engine gives them (up to
/// summation order), and each shape's winner is in use from its last candidate on.
#[test]
fn tuning_between_steps_keeps_the_conversation() {
    let Some(gpu) = gpu() else { return };
    let (prompt, next) = ([1u32, 50, 300, 7], [99u32, 12, 5]);
    // Tuning is per Gpu: the plain engine has one of its own.
    let mut plain = load(&common::gpu().unwrap());
    plain.prefill(&prompt).block_on().unwrap();
    let mut tuned = load(&gpu);
    tuned.prefill(&prompt).block_on().unwrap();
    let mut tuner = tuned.tuner(TuneShapes::All).block_on().unwrap();
    let mut steps = 0;
    for &t in &next {
        // A few candidates, then a token.
        for _ in 0..7 {
            if tuned.tune_step(&mut tuner).block_on().unwrap() {
                steps += 1;
            }
        }
        let want = plain.step(t, true).block_on().unwrap().unwrap();
        let got = tuned.step(t, true).block_on().unwrap().unwrap();
        let diff = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(
            diff < 1e-3,
            "after {steps} tuning steps, logits differ by {diff}"
        );
    }
    assert_eq!(tuner.timed, steps);
    for t in tuner.tuned() {
        let kept = gpu.tuning().choice(&t.shape, gpu.adapter());
        assert_eq!(kept, t.after.0);
    }
    assert!(
        !tuner.tuned().is_empty(),
        "{} candidates timed, no shape finished",
        tuner.timed
    );
}

/// Tuning to its end between two tokens, where it runs whole plans to time each shape's finalists
/// where they run (natively, on adapters that write timestamps between dispatches), leaves the
/// conversation as it was, a recurrent model's states included: the tokens after it get the logits
/// an untuned engine gives them, up to summation order.
#[test]
fn tuning_to_the_end_keeps_a_recurrent_models_state() {
    let Some(gpu) = gpu() else { return };
    let (prompt, next) = ([1u32, 50, 300, 7], [99u32, 12, 5]);
    let model = "random-qwen35-q8_0.gguf";
    let mut plain = load_file(&common::gpu().unwrap(), model);
    plain.prefill(&prompt).block_on().unwrap();
    let mut tuned = load_file(&gpu, model);
    tuned.prefill(&prompt).block_on().unwrap();
    let mut tuner = tuned.tuner(TuneShapes::All).block_on().unwrap();
    while tuned.tune_step(&mut tuner).block_on().unwrap() {}
    assert_eq!(
        tuner.timed, tuner.candidates,
        "every candidate and round timed"
    );
    assert!(!tuner.tuned().is_empty());
    for &t in &next {
        let want = plain.step(t, true).block_on().unwrap().unwrap();
        let got = tuned.step(t, true).block_on().unwrap().unwrap();
        let diff = (got.iter().zip(&want))
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(diff < 1e-3, "after tuning, logits differ by {diff}");
    }
}

/// A prompt's chunk of a recurrent model offers its recurrence's form to the tuner (token by token,
/// or in chunks of each size that fits), and its attention layers' form (a query a thread, or blocks
/// of queries whose heads are split over a subgroup's threads): the forms kept are among them, the
/// chunk's plan runs them, and tuning in the middle of a conversation leaves the conversation as it was: the prompt's next chunk
/// and the steps after it get the logits an untuned engine gives them, up to summation order.
#[test]
fn a_prompts_recurrence_and_attention_are_tuned_and_keep_the_conversation() {
    let Some(gpu) = gpu() else { return };
    let (prompt, more, next) = (
        [1u32, 50, 300, 7, 12, 40, 9],
        [5u32, 77, 3, 8, 21],
        [99u32, 12],
    );
    let model = "random-qwen35-q8_0.gguf";
    let mut plain = load_batched(&common::gpu().unwrap(), model, 16);
    plain.prefill(&prompt).block_on().unwrap();
    let mut tuned = load_batched(&gpu, model, 16);
    tuned.prefill(&prompt).block_on().unwrap();
    let (tuning, report) = tuned.tune(TuneShapes::All).block_on().unwrap();
    let recurrences: Vec<&Tuned> = (report.iter())
        .filter(|t| matches!(t.shape, Tunable::Recurrence(_)))
        .collect();
    assert_eq!(recurrences.len(), 1, "{report:?}");
    let t = recurrences[0];
    let offered = candidates(&gpu, &t.shape);
    assert!(offered.len() >= 2, "{offered:?}"); // the token form and at least one chunk
    assert!(offered.contains(&t.after.0), "{t:?}");
    assert_eq!(tuning.choice(&t.shape, gpu.adapter()), t.after.0);
    // Its attention layers' chunk, heads of 64: a query a thread, and blocks of queries where the
    // adapter's subgroups split heads.
    let attentions: Vec<&Tuned> = (report.iter())
        .filter(|t| matches!(t.shape, Tunable::Attention(_)))
        .collect();
    assert_eq!(attentions.len(), 1, "{report:?}");
    let t = attentions[0];
    let offered = candidates(&gpu, &t.shape);
    let split = gpu.subgroup_size.is_some_and(|s| s >= 8);
    assert_eq!(offered.len() > 1, split, "{offered:?}");
    assert!(offered.contains(&t.after.0), "{t:?}");
    assert_eq!(tuning.choice(&t.shape, gpu.adapter()), t.after.0);
    eprintln!("{t:?}");
    goes_on_as_untuned(&mut plain, &mut tuned, &more, &next);
}

/// A decode step deep into a context (from position 1024 on, attention split over the keys) offers
/// its split's form to the tuner (a key a thread; heads over a subgroup's lanes, where it has
/// subgroups), which times it at depth, and so does a speculative check of 3 tokens there (a shape
/// of its own, its tokens at consecutive positions): each form kept is among the offers, and the
/// steps and the check after tuning get the logits an untuned engine's steps give, up to summation
/// order. So do those of an engine loaded with each offered form given to each split. gpt-oss:
/// sinks, and a window on two layers of three.
#[test]
fn a_deep_steps_split_attention_is_tuned_and_keeps_the_conversation() {
    let Some(gpu) = gpu() else { return };
    // A CPU-backed adapter splits no step of several tokens unless told (`Gpu::splits_steps`).
    gpu.set_splits_steps(true);
    let model = "random-gpt-oss-q8_0.gguf";
    let load = |gpu: &Arc<Gpu>| load_checking(gpu, model, (64, 1100), 3);
    let prompt: Vec<u32> = (0..1030u32).map(|i| i * 37 % 200 + 1).collect();
    let next = [99u32, 12, 5];
    let mut plain = load_in(&common::gpu().unwrap(), model, 64, 1100);
    plain.prefill(&prompt).block_on().unwrap();
    let want: Vec<Vec<f32>> = (next.iter())
        .map(|&t| plain.step(t, true).block_on().unwrap().unwrap())
        .collect();
    let assert_near = |got: &[f32], want: &[f32], label: &str| {
        let diff = (got.iter().zip(want))
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(diff < 1e-3, "{label}: logits differ by {diff}");
    };
    // A check of the next tokens, taken back, then the same tokens as steps.
    let goes_on = |engine: &mut Engine, label: &str| {
        let wants = vec![wick::sampler::Want::Logits; next.len()];
        let rows = engine.check(&next, &wants).block_on().unwrap();
        for (row, want) in rows.into_iter().zip(&want) {
            let wick::sampler::SequenceStep::Logits(got) = row else {
                panic!("a check's row without its logits")
            };
            assert_near(&got, want, &format!("{label}, a check"));
        }
        engine.keep_checked(0).block_on().unwrap();
        for (&token, want) in next.iter().zip(&want) {
            let got = engine.step(token, true).block_on().unwrap().unwrap();
            assert_near(&got, want, &format!("{label}, a step"));
        }
    };

    let mut tuned = load(&gpu);
    tuned.prefill(&prompt).block_on().unwrap();
    let (tuning, report) = tuned.tune(TuneShapes::All).block_on().unwrap();
    let splits: Vec<&Tuned> = (report.iter())
        .filter(|t| matches!(t.shape, Tunable::Attention(a) if a.splits.is_some()))
        .collect();
    let mut tokens: Vec<u32> = (splits.iter())
        .map(|t| match t.shape {
            Tunable::Attention(a) => a.tokens,
            _ => unreachable!(),
        })
        .collect();
    tokens.sort();
    assert_eq!(tokens, [1, 3], "{report:?}");
    let lanes = gpu.subgroup_size.is_some_and(|s| s >= 4);
    for t in &splits {
        let offered = candidates(&gpu, &t.shape);
        assert_eq!(offered.len() > 1, lanes, "{offered:?}");
        assert!(offered.contains(&t.after.0), "{t:?}");
        assert_eq!(tuning.choice(&t.shape, gpu.adapter()), t.after.0);
        eprintln!("{t:?}");
    }
    goes_on(&mut tuned, "tuned");

    for t in &splits {
        for form in candidates(&gpu, &t.shape) {
            let mut forced = tuning.clone();
            forced.insert(&t.shape, form);
            gpu.set_tuning(forced);
            let mut engine = load(&gpu);
            engine.prefill(&prompt).block_on().unwrap();
            goes_on(&mut engine, &format!("{:?}: {form}", t.shape));
        }
    }
    gpu.set_tuning(Default::default());
}

/// A mixture-of-experts prompt's products over the experts' lists offer their tiles to the tuner,
/// each candidate timed over the lists that a chunk of scratch tokens makes (the chunk's plan runs
/// up to the product first): the tile kept is one of them, and tuning in the middle of a
/// conversation leaves it as it was, the cache and a recurrent model's states included (qwen35moe:
/// Gated DeltaNet layers and experts).
#[test]
fn a_prompts_experts_are_tuned_and_keep_the_conversation() {
    let Some(gpu) = gpu() else { return };
    let (prompt, more, next) = (
        [1u32, 50, 300, 7, 12, 40, 9],
        [5u32, 77, 3, 8, 21],
        [99u32, 12],
    );
    let model = "random-qwen35moe-q8_0.gguf";
    let mut plain = load_batched(&common::gpu().unwrap(), model, 16);
    plain.prefill(&prompt).block_on().unwrap();
    let mut tuned = load_batched(&gpu, model, 16);
    tuned.prefill(&prompt).block_on().unwrap();
    let (tuning, report) = tuned.tune(TuneShapes::All).block_on().unwrap();
    let experts: Vec<(MatvecShape, MatvecKernel)> = (report.iter())
        .filter_map(matvec)
        .filter(|(shape, _)| shape.kernel == Kernel::MatmulId)
        .collect();
    assert!(!experts.is_empty(), "{report:?}");
    for (shape, kernel) in experts {
        let offered = shape.candidates(gpu.offers());
        assert!(
            offered.len() >= 2 && offered.contains(&kernel),
            "{shape:?}: {kernel}"
        );
        assert_eq!(tuning.matvec(&shape, gpu.adapter()), kernel);
    }
    goes_on_as_untuned(&mut plain, &mut tuned, &more, &next);
}

/// The prompt's next chunk `more` and the steps of `next` after it get the same logits from the
/// tuned engine as from the plain one, up to summation order.
fn goes_on_as_untuned(plain: &mut Engine, tuned: &mut Engine, more: &[u32], next: &[u32]) {
    let want = plain.prefill(more).block_on().unwrap();
    let got = tuned.prefill(more).block_on().unwrap();
    let diff = (got.iter().zip(&want))
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(
        diff < 1e-3,
        "the chunk after tuning: logits differ by {diff}"
    );
    for &token in next {
        let want = plain.step(token, true).block_on().unwrap().unwrap();
        let got = tuned.step(token, true).block_on().unwrap().unwrap();
        let diff = (got.iter().zip(&want))
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(diff < 1e-3, "a step after tuning: logits differ by {diff}");
    }
}

/// Winners kept from an older set of candidates (a file written before the set grew, which has no
/// `candidates`) are dropped when given to the GPU, so their shapes are timed again among the new
/// candidates; winners of the current set are kept.
#[test]
fn winners_of_an_older_candidate_set_are_timed_again() {
    let Some(gpu) = gpu() else { return };
    let old = r#"{"matvec": {"Q4_K 2048x2048": {"workgroup": 64, "threads_per_row": 8,
        "subgroup_sum": false, "blocks": true}}}"#;
    let old: wick::gpu::Tuning = serde_json::from_str(old).unwrap();
    assert_eq!(old.candidates, 0);
    gpu.set_tuning(old.clone());
    assert!(gpu.tuning().matvec.is_empty(), "{:?}", gpu.tuning());
    let current = wick::gpu::Tuning {
        candidates: wick::gpu::CANDIDATES,
        ..old
    };
    gpu.set_tuning(current.clone());
    assert_eq!(gpu.tuning().matvec, current.matvec);
    gpu.set_tuning(Default::default());
}

/// A step of several sequences takes four tokens to a workgroup in its products: shapes with winners
/// of their own (`MatvecShape::tokens`). The tuner times them beside the decode step's, the parallel
/// plan runs the winners from then on, and its logits stay as they were, up to summation order.
#[test]
fn a_parallel_steps_shapes_are_tuned_too() {
    let Some(gpu) = gpu() else { return };
    let mut engine = load_sequences(&gpu, 4);
    let rows = |engine: &mut Engine| parallel_logits(engine, &[1, 50, 300, 7]);
    let want = rows(&mut engine);
    let untuned = engine.untuned_shapes();
    assert!(
        (untuned.iter()).any(|s| matches!(s, Tunable::Matvec(m) if m.tokens == 4)),
        "{untuned:?}"
    );
    let (tuning, report) = engine.tune(TuneShapes::New).block_on().unwrap();
    let four: Vec<(MatvecShape, MatvecKernel)> = (report.iter())
        .filter_map(matvec)
        .filter(|(shape, _)| shape.tokens == 4)
        .collect();
    assert!(!four.is_empty(), "{report:?}");
    for (shape, kernel) in &four {
        assert!(shape.key().contains(" x4"), "{shape:?}");
        let offered = shape.candidates(gpu.offers());
        assert!(offered.contains(kernel), "{shape:?} {kernel:?}");
        assert_eq!(tuning.matvec.get(&shape.key()), Some(kernel));
    }
    // The parallel plan runs the winners.
    let profile = engine
        .profile(wick::engine::Profiled::Parallel(4))
        .block_on()
        .unwrap()
        .unwrap();
    for (shape, kernel) in &four {
        let name = wick::gpu::PipelineKey::matvec(shape, *kernel).name();
        assert!(
            profile.kernels.iter().any(|(n, _)| *n == name),
            "{name}: {profile:?}"
        );
    }
    let got = rows(&mut engine);
    let diff = (got.iter().zip(&want))
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(diff < 1e-3, "tuned logits differ by {diff}");
}

/// A step of up to four sequences and one of five to eight take their products' kernels from
/// winners of their own (`MatvecShape::in_step`: " x4" and " x4 of 8"), each in a plan of its own
/// (`Parallel::few`): the tuner times both kinds, and given different kernels for them, a step of 3
/// runs the first and a step of 6 the second, their logits as untuned, up to summation order.
#[test]
fn steps_of_few_and_of_many_sequences_run_winners_of_their_own() {
    let Some(gpu) = gpu() else { return };
    let load = || load_sequences(&gpu, 6);
    let mut engine = load();
    let tokens = [1u32, 50, 300, 7, 99, 4];
    let rows = |engine: &mut Engine, n: usize| parallel_logits(engine, &tokens[..n]);
    let want = [rows(&mut engine, 3), rows(&mut engine, 6)];
    let step_shapes = |runs_of: u32| -> Vec<MatvecShape> {
        (engine.untuned_shapes().into_iter())
            .filter_map(|s| match s {
                Tunable::Matvec(m) if m.tokens == 4 && m.runs_of == runs_of => Some(m),
                _ => None,
            })
            .collect()
    };
    let (few, many) = (step_shapes(1), step_shapes(8));
    assert!(
        !few.is_empty() && few.len() == many.len(),
        "{few:?} {many:?}"
    );
    for (a, b) in few.iter().zip(&many) {
        assert!(a.key().ends_with(&b.key().replace(" x4 of 8", " x4")));
        assert_ne!(a.key(), b.key());
    }
    // Different kernels for the two kinds: each shape's default, and another of its candidates.
    let mut tuning = wick::gpu::Tuning::default();
    let mut names = [Vec::new(), Vec::new()];
    for (kind, shapes) in [&few, &many].into_iter().enumerate() {
        for shape in shapes {
            let offered = shape.candidates(gpu.offers());
            let other = (offered.iter()).find(|k| **k != offered[0] && shape.fits(k, &gpu.limits));
            let kernel = if kind == 0 {
                offered[0]
            } else {
                *other.unwrap()
            };
            tuning.matvec.insert(shape.key(), kernel);
            names[kind].push(wick::gpu::PipelineKey::matvec(shape, kernel).name());
        }
    }
    gpu.set_tuning(tuning);
    let mut engine = load();
    for (kind, tokens) in [(0, 3), (1, 6)] {
        let profile = engine
            .profile(wick::engine::Profiled::Parallel(tokens))
            .block_on()
            .unwrap()
            .unwrap();
        let ran = |name: &String| profile.kernels.iter().any(|(n, _)| n == name);
        assert!(names[kind].iter().all(ran), "{tokens}: {profile:?}");
        assert!(!names[1 - kind]
            .iter()
            .any(|n| ran(n) && !names[kind].contains(n)));
    }
    for (n, want) in [3, 6].into_iter().zip(&want) {
        let got = rows(&mut engine, n);
        let diff = (got.iter().zip(want))
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(diff < 1e-3, "a step of {n}: tuned logits differ by {diff}");
    }
    // The tuner times both kinds.
    gpu.set_tuning(wick::gpu::Tuning::default());
    let mut engine = load();
    let (_, report) = engine.tune(TuneShapes::New).block_on().unwrap();
    let tuned: Vec<String> = report
        .iter()
        .filter_map(matvec)
        .map(|(s, _)| s.key())
        .collect();
    for shape in few.iter().chain(&many) {
        assert!(tuned.contains(&shape.key()), "{shape:?}: {tuned:?}");
    }
    gpu.set_tuning(wick::gpu::Tuning::default());
}

/// The tiny random-weight llama with a parallel plan of `sequences` rows, 16 positions each.
fn load_sequences(gpu: &Arc<Gpu>, sequences: u32) -> Engine {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/random-llama-chat.gguf");
    let source = FileSource::open(path).unwrap();
    let options = LoadOptions {
        n_ctx: 16 * sequences,
        sequences,
        ..Default::default()
    };
    Engine::load(gpu.clone(), &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap()
}

/// The logits of one parallel step of `tokens`, each the first token of its own sequence.
fn parallel_logits(engine: &mut Engine, tokens: &[u32]) -> Vec<f32> {
    let segments: Vec<wick::gpu::Segment> = (tokens.chunks(1).enumerate())
        .map(|(s, t)| wick::gpu::Segment::new(s as u32 * 16, 0, t))
        .collect();
    let wants = vec![wick::sampler::Want::Logits; tokens.len()];
    let steps = engine.step_parallel(&segments, &wants).block_on().unwrap();
    (steps.into_iter())
        .flat_map(|s| match s {
            wick::sampler::SequenceStep::Logits(row) => row,
            other => panic!("logits were asked for, not {other:?}"),
        })
        .collect()
}

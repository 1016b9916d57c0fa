//! Speculative decoding: replies with a draft equal replies without (greedy, token for token, with
//! the model's log-probabilities), a sampled draft's kept tokens follow the model's distribution,
//! and a draft model of another vocabulary is refused.

use crate::common;

use common::gpu;
use common::speculation::{assert_same_reply, requantized, session, CHECK};
use pollster::FutureExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wick::engine::LoadOptions;
use wick::gguf::FileSource;
use wick::gpu::Gpu;
use wick::grammar::Grammar;
use wick::reply::Reply;
use wick::sampler::{Sampler, SamplerConfig, TokenLogProb, Want};
use wick::session::Session;
use wick::speculate::{self, DraftModel, Drafter, Speculation};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// A greedy reply of `n` tokens with each token's log-probability and its two likeliest.
fn reply(s: &mut Session, prompt: &[u32], n: usize) -> (Vec<u32>, Vec<TokenLogProb>) {
    let mut sampler = Sampler::new(SamplerConfig::greedy());
    sampler.log_probs = Some(2);
    let c = s
        .complete(prompt, Reply::new(n, &[]), &mut sampler, &mut |_| true)
        .block_on()
        .unwrap();
    (c.tokens, c.log_probs)
}

/// Tokens of the SmolLM2 replies that a draft model's stopping and sizes are checked over: checks
/// of every size several times, and each reply a few seconds on a CPU adapter.
const REPLY: usize = 24;

/// Rows of the random files' draft heads: of their 512 tokens, the first 300 (not a whole number of
/// the mask's 32-token words), so that drafts come from a head cut short as a real draft's is.
const DRAFT_HEAD_ROWS: u32 = 300;

/// A draft model for session `s` from `file`, its head's rows as `head_rows` says (None: a draft's
/// default, `speculate::DRAFT_HEAD_ROWS`).
fn draft_model(gpu: &Arc<Gpu>, file: &Path, s: &Session, head_rows: Option<u32>) -> DraftModel {
    let source = FileSource::open(file).unwrap();
    let options = LoadOptions {
        n_ctx: 256,
        batch: Some(16),
        head_rows,
        ..Default::default()
    };
    DraftModel::load(gpu.clone(), &source, &options, &s.tokenizer, &mut |_, _| {})
        .block_on()
        .unwrap()
}

/// The draft model of a speculation that drafted with one, for the next reply to draft with.
fn draft_back(speculation: Speculation) -> Box<DraftModel> {
    match speculation.drafter {
        Drafter::Model(model) => model,
        _ => unreachable!("a draft model"),
    }
}

/// The random files of every family (their trained contexts are 256 tokens, gpt-oss's longer).
const FAMILY_FILES: [&str; 12] = [
    "tests/data/random-llama3.gguf",
    "tests/data/random-llama-q4_k_m.gguf",
    "tests/data/random-qwen3.gguf",
    "tests/data/random-phi3.gguf",
    "tests/data/random-gemma2.gguf",
    "tests/data/random-gemma4-q8_0.gguf",
    "tests/data/random-qwen35-q8_0.gguf",
    "tests/data/random-qwen3moe-q8_0.gguf",
    "tests/data/random-qwen35moe-q8_0.gguf",
    "tests/data/random-gpt-oss-q8_0.gguf",
    "tests/data/random-deepseek2-dense-q0.gguf",
    "tests/data/random-deepseek2-moe-softmax.gguf",
];

#[test]
fn greedy_replies_with_drafts_equal_plain_replies_on_every_family() {
    let Some(gpu) = gpu() else { return };
    // A prompt that repeats itself, so that lookup may find drafts.
    let prompt: Vec<u32> = (0..36u32).map(|i| (i % 9) * 37 + 11).collect();
    for name in FAMILY_FILES {
        let file = data(name);
        let plain = reply(&mut session(&gpu, &file, 0), &prompt, 40);

        let mut s = session(&gpu, &file, CHECK);
        // Each plan run once and forgotten (as the browser's package does before a first reply):
        // the reply is a fresh cache's.
        s.engine.warm_up().block_on().unwrap();
        s.speculation = Some(Speculation::always(Drafter::Lookup, CHECK as usize - 1));
        let lookup = reply(&mut s, &prompt, 40);
        eprintln!(
            "{name}, lookup: {:?}",
            s.speculation.as_ref().unwrap().stats
        );
        assert_same_reply(name, &plain, &lookup);

        let draft_file = requantized(&file);
        let mut draft = draft_model(&gpu, &draft_file, &s, Some(DRAFT_HEAD_ROWS));
        draft.engine.warm_up().block_on().unwrap();
        std::fs::remove_file(&draft_file).ok();
        s.speculation = Some(Speculation::always(
            Drafter::Model(Box::new(draft)),
            CHECK as usize - 1,
        ));
        let drafted = reply(&mut s, &prompt, 40);
        let stats = s.speculation.as_ref().unwrap().stats;
        eprintln!("{name}, a Q4_0 draft: {stats:?}");
        assert!(stats.checks > 0, "{name}: no draft was checked");
        assert_same_reply(name, &plain, &drafted);
        // The session goes on from what it kept: a second turn is as a fresh session's.
        let mut next = [prompt.clone(), drafted.0.clone(), vec![5, 6, 7]].concat();
        next.truncate(120);
        let fresh = reply(&mut session(&gpu, &file, 0), &next, 12);
        let again = reply(&mut s, &next, 12);
        assert_same_reply(name, &fresh, &again);
    }
}

/// A head of the vocabulary's first rows (`LoadOptions::head_rows`, a draft model's) gives the
/// logits of those tokens alone, each as the whole head gives it, and chooses among them: a decode
/// step's row and a check's rows: on the heads each family's loading makes alike (the dense block's
/// after the final norm, after Gemma's post-norms with Gemma 2's soft-capped logits, and
/// deepseek2's).
#[test]
fn a_head_of_the_vocabularys_first_rows_gives_their_logits() {
    let Some(gpu) = gpu() else { return };
    let prompt: Vec<u32> = (0..20u32).map(|i| (i % 9) * 37 + 11).collect();
    let load = |file: &Path, head_rows| {
        let source = FileSource::open(file).unwrap();
        let options = LoadOptions {
            n_ctx: 64,
            batch: Some(16),
            check_tokens: 2,
            head_rows,
            ..Default::default()
        };
        let mut engine = wick::engine::Engine::load(gpu.clone(), &source, &options, &mut |_, _| {})
            .block_on()
            .unwrap();
        engine.feed(&prompt).block_on().unwrap();
        engine
    };
    let logits = |step: &wick::sampler::SequenceStep| match step {
        wick::sampler::SequenceStep::Logits(row) => row.clone(),
        other => panic!("logits asked, {other:?} read"),
    };
    let first_largest = |row: &[f32]| {
        (0..row.len()).fold(0, |best, i| if row[i] > row[best] { i } else { best }) as u32
    };
    let heads = [
        "tests/data/random-llama3.gguf",
        "tests/data/random-gemma2.gguf",
        "tests/data/random-gemma4-q8_0.gguf",
        "tests/data/random-deepseek2-dense-q0.gguf",
    ];
    for name in heads {
        let file = data(name);
        let mut whole = load(&file, None);
        let mut cut = load(&file, Some(DRAFT_HEAD_ROWS));
        assert_eq!(cut.n_vocab(), whole.n_vocab(), "{name}: tokens read");
        assert_eq!(cut.n_logits(), DRAFT_HEAD_ROWS, "{name}: logits a row");
        let want = [Want::Logits, Want::Logits];
        let rows_whole = whole.check(&[5, 450], &want).block_on().unwrap();
        let rows_cut = cut.check(&[5, 450], &want).block_on().unwrap();
        let step_whole = whole.step_wanted(&[7], &Want::Logits).block_on().unwrap();
        let step_cut = cut.step_wanted(&[7], &Want::Choice).block_on().unwrap();
        for (i, (w, c)) in rows_whole.iter().zip(&rows_cut).enumerate() {
            let (w, c) = (logits(w), logits(c));
            assert_eq!(
                c.len(),
                DRAFT_HEAD_ROWS as usize,
                "{name}: row {i}'s logits"
            );
            for (t, (a, b)) in w.iter().zip(&c).enumerate() {
                let tolerance = 1e-4 * a.abs().max(1.0);
                assert!(
                    (a - b).abs() <= tolerance,
                    "{name}: row {i}, token {t}: {b} cut, {a} whole"
                );
            }
        }
        let expected = first_largest(&logits(&step_whole)[..DRAFT_HEAD_ROWS as usize]);
        match step_cut {
            wick::sampler::SequenceStep::Choice { id: token, .. } => {
                assert_eq!(token, expected, "{name}: the choice among the first rows")
            }
            other => panic!("{name}: a choice asked, {other:?} read"),
        }
    }
}

/// A step's attention split over the keys from position 8 on rather than 1024
/// (`Gpu::split_attention_from`), a speculative check's too (`Gpu::splits_steps`), so that every
/// family's decode steps and lookup's checks after a 36-token prompt run the split plans: each
/// reply equals the plain one, token for token, with the same log-probabilities (sinks and windows,
/// soft-capping, Gemma 4's 512-wide heads and shared caches, Qwen3.5's recurrent layers beside
/// attention, experts, MLA).
#[test]
fn replies_with_attention_split_from_position_8_equal_plain_replies_on_every_family() {
    let (Some(gpu), Some(split)) = (gpu(), gpu()) else {
        return;
    };
    split.set_split_attention_from(8);
    split.set_splits_steps(true);
    let prompt: Vec<u32> = (0..36u32).map(|i| (i % 9) * 37 + 11).collect();
    for name in FAMILY_FILES {
        let file = data(name);
        let plain = reply(&mut session(&gpu, &file, 0), &prompt, 24);
        let mut s = session(&split, &file, CHECK);
        assert_same_reply(name, &plain, &reply(&mut s, &prompt, 24));
        s.speculation = Some(Speculation::always(Drafter::Lookup, CHECK as usize - 1));
        let checked = reply(&mut s, &prompt, 24);
        let stats = s.speculation.as_ref().unwrap().stats;
        eprintln!("{name}, split from 8, lookup: {stats:?}");
        assert_same_reply(name, &plain, &checked);
    }
}

/// Deep into a context (from position 1024 on) a check of drafted tokens splits each token's
/// attention over its keys, as a decode step there does, where the adapter splits steps of several
/// tokens (a GPU's default, set here): each row's logits are its step's, up to summation order, and
/// the check runs more dispatches than at position 0 (a merge after each layer's split). Where the
/// adapter does not split them (a CPU-backed adapter's default), the check keeps its plan and the
/// same logits. gpt-oss: sinks, and a window on two layers of three.
#[test]
fn a_check_deep_into_a_context_splits_its_attention_and_gives_each_tokens_step() {
    let Some(gpu) = gpu() else { return };
    let source = FileSource::open(data("tests/data/random-gpt-oss-q8_0.gguf")).unwrap();
    let load = || {
        let options = LoadOptions {
            n_ctx: 1100,
            batch: Some(64),
            check_tokens: CHECK,
            ..Default::default()
        };
        wick::engine::Engine::load(gpu.clone(), &source, &options, &mut |_, _| {})
            .block_on()
            .unwrap()
    };
    let prompt: Vec<u32> = (0..1030u32).map(|i| i * 37 % 200 + 1).collect();
    let drafted = [99u32, 12, 5, 140, 3];
    for split in [true, false] {
        gpu.set_splits_steps(split);
        let (diff, [deep, at_start]) = common::check_against_steps(load, &prompt, &drafted);
        eprintln!(
            "a check at 1030, split {split}: logits differ from its steps' by {diff:.2e}; \
             {deep} dispatches, {at_start} at 0"
        );
        assert!(
            diff < 1e-3,
            "split {split}: a check's logits differ from its steps' by {diff}"
        );
        assert_eq!(
            deep > at_start,
            split,
            "split {split}: {deep} dispatches, {at_start} at 0"
        );
    }
}

#[test]
fn a_draft_model_gives_smollm2s_reply_and_a_grammar_holds_its_drafts() {
    let Some(gpu) = gpu() else { return };
    let target = common::model_path();
    let draft_path = requantized(&target);
    let mut plain = session(&gpu, &target, 0);
    let prompt = plain.tokenize_prompt(
        "<|im_start|>user\nList the planets of the solar system, one a line.<|im_end|>\n<|im_start|>assistant\n",
    );
    // Long enough for a draft that errs at least once, and for steps ahead to keep most drafts.
    let n = 32;
    let want = reply(&mut plain, &prompt, n);
    let mut s = session(&gpu, &target, CHECK);
    // SmolLM2's 49,152 tokens, the first 32,768 of them proposed.
    let draft = draft_model(&gpu, &draft_path, &s, None);
    s.speculation = Some(Speculation::always(
        Drafter::Model(Box::new(draft)),
        CHECK as usize - 1,
    ));
    let got = reply(&mut s, &prompt, n);
    let stats = s.speculation.as_ref().unwrap().stats;
    eprintln!(
        "draft model: {stats:?}, {:.2} tokens a check",
        stats.tokens_per_check()
    );
    assert!(
        stats.accepted > 0 && stats.accepted < stats.proposed,
        "{stats:?}"
    );
    assert_same_reply("smollm2 with a draft", &want, &got);
    std::fs::remove_file(&draft_path).ok();

    // Without log-probabilities the draft's greedy steps go a step ahead (`DraftModel::draft`),
    // each submitted before the one before it is read back: the reply is the same.
    let greedy_reply = |s: &mut Session| {
        let mut sampler = Sampler::new(SamplerConfig::greedy());
        let reply = Reply::new(n, &[]);
        s.complete(&prompt, reply, &mut sampler, &mut |_| true)
            .block_on()
            .unwrap()
            .tokens
    };
    let draft_ahead = |s: &Session| match &s.speculation.as_ref().unwrap().drafter {
        Drafter::Model(model) => model.engine.stats.totals.ahead,
        _ => unreachable!("a draft model"),
    };
    let before = (draft_ahead(&s), s.speculation.as_ref().unwrap().stats);
    assert_eq!(greedy_reply(&mut s), greedy_reply(&mut plain));
    assert!(draft_ahead(&s) > before.0, "no draft step went ahead");
    // A draft close to the model proposes mostly what it picks, where each step ahead runs the
    // token the step before chose (not, say, the token before it).
    let stats = s.speculation.as_ref().unwrap().stats;
    let (proposed, accepted) = (
        stats.proposed - before.1.proposed,
        stats.accepted - before.1.accepted,
    );
    eprintln!("a step ahead: {accepted} of {proposed} drafted tokens kept");
    assert!(2 * accepted > proposed, "{accepted} of {proposed} kept");

    // A JSON reply: the draft proposes within the grammar, the reply is as without a draft.
    let json = |s: &mut Session| {
        let mut sampler = Sampler::new(SamplerConfig::greedy());
        sampler.constraint = Some(s.constraint(&Grammar::JsonObject).unwrap());
        let prompt = s.tokenize_prompt(
            "<|im_start|>user\nGive a JSON object with the name and age of a person.<|im_end|>\n<|im_start|>assistant\n",
        );
        let c = s
            .complete(&prompt, Reply::new(40, &[]), &mut sampler, &mut |_| true)
            .block_on()
            .unwrap();
        c.text
    };
    let plain_json = json(&mut plain);
    let before = s.speculation.as_ref().unwrap().stats.checks;
    assert_eq!(json(&mut s), plain_json);
    assert!(s.speculation.as_ref().unwrap().stats.checks > before);
}

/// A draft that is the model itself (the same file, every head row) proposes what the model picks:
/// its drafted tokens stand, but for a near tie that the check's sums break otherwise. Drafts of
/// every size up to the check's, after drafts that all stood (whose last token the draft reads
/// with its next draft's first) and after drafts cut short by the reply's end, without
/// log-probabilities (the draft's steps go a step ahead) and with them, in turn: a draft whose
/// cache fell out of step with the model's would propose the text of another place. One draft
/// model serves every reply, as a server's does, each reply starting where its cache left off.
#[test]
fn a_draft_that_is_the_model_has_its_drafts_kept() {
    let Some(gpu) = gpu() else { return };
    let target = common::model_path();
    let mut s = session(&gpu, &target, CHECK);
    let prompt = s.tokenize_prompt(
        "<|im_start|>user\nWrite a short story about a lighthouse keeper.<|im_end|>\n<|im_start|>assistant\n",
    );
    let mut draft = Box::new(draft_model(&gpu, &target, &s, Some(u32::MAX)));
    for max in 1..CHECK as usize {
        let log_probs = (max % 2 == 0).then_some(2);
        s.speculation = Some(Speculation::always(Drafter::Model(draft), max));
        let mut sampler = Sampler::new(SamplerConfig::greedy());
        sampler.log_probs = log_probs;
        (s.complete(&prompt, Reply::new(REPLY, &[]), &mut sampler, &mut |_| true))
            .block_on()
            .unwrap();
        let speculation = s.speculation.take().unwrap();
        let stats = speculation.stats;
        eprintln!("drafts of {max}, log-probabilities {log_probs:?}: {stats:?}");
        assert!(stats.checks > 0, "drafts of {max}: no check");
        assert!(
            stats.accepted + 2 >= stats.proposed,
            "drafts of {max}, log-probabilities {log_probs:?}: {} of {} drafted tokens kept",
            stats.accepted,
            stats.proposed
        );
        draft = draft_back(speculation);
    }
}

/// A draft model stops after a token it gives less than the speculation's `min_chance`: its
/// softmax there, the chance the GPU's greedy choice reads back beside it (or, where log-
/// probabilities are asked, the candidates' with their row's log-sum-exp). Never sure (a least
/// chance above 1), every draft is one token; sure of all (0), every draft is as long as the step
/// asks; at the default, between, and more of the drafted tokens stand. The reply is the plain one.
/// Never and always sure stop drafts alike whatever chance is read, so they run once, without
/// log-probabilities; the default, whose stops the chance decides, runs with and without.
#[test]
fn a_draft_model_stops_after_a_token_it_is_unsure_of() {
    let Some(gpu) = gpu() else { return };
    let target = common::model_path();
    let draft_path = requantized(&target);
    let mut plain = session(&gpu, &target, 0);
    let mut s = session(&gpu, &target, CHECK);
    let prompt = s.tokenize_prompt(
        "<|im_start|>user\nWrite a short story about a lighthouse keeper.<|im_end|>\n<|im_start|>assistant\n",
    );
    let greedy = |s: &mut Session, log_probs: Option<usize>| {
        let mut sampler = Sampler::new(SamplerConfig::greedy());
        sampler.log_probs = log_probs;
        let c = (s.complete(&prompt, Reply::new(REPLY, &[]), &mut sampler, &mut |_| true))
            .block_on()
            .unwrap();
        (c.tokens, c.log_probs)
    };
    let want = [greedy(&mut plain, None), greedy(&mut plain, Some(2))];
    let mut draft = Box::new(draft_model(&gpu, &draft_path, &s, None));
    let default = speculate::DRAFT_MIN_CHANCE;
    let mut stats = Vec::new();
    for (log_probs, min_chance) in [
        (None, 2.0),
        (None, default),
        (None, 0.0),
        (Some(2), default),
    ] {
        let mut speculation = Speculation::always(Drafter::Model(draft), CHECK as usize - 1);
        speculation.min_chance = min_chance;
        s.speculation = Some(speculation);
        let got = greedy(&mut s, log_probs);
        let name = format!("least chance {min_chance}, log-probabilities {log_probs:?}");
        match log_probs {
            Some(_) => assert_same_reply(&name, &want[1], &got),
            None => assert_eq!(got.0, want[0].0, "{name}"),
        }
        let speculation = s.speculation.take().unwrap();
        let st = speculation.stats;
        eprintln!(
            "{name}: {st:?}, {:.2} tokens a check",
            st.tokens_per_check()
        );
        assert!(st.checks > 0, "{name}: no check");
        stats.push(st);
        draft = draft_back(speculation);
    }
    let [never, default, always, default_with_log_probs] = stats[..] else {
        unreachable!("four runs")
    };
    assert_eq!(never.proposed, never.checks, "drafts of one token");
    let per_check = |st: &speculate::SpeculationStats| st.proposed as f64 / st.checks as f64;
    let standing = |st: &speculate::SpeculationStats| st.accepted as f64 / st.proposed as f64;
    for (default, asked) in [(default, "without"), (default_with_log_probs, "with")] {
        assert!(
            1.0 < per_check(&default) && per_check(&default) < per_check(&always),
            "{asked} log-probabilities: {:.2} drafted tokens a check, {:.2} unstopped",
            per_check(&default),
            per_check(&always)
        );
        assert!(
            standing(&default) >= standing(&always),
            "{asked} log-probabilities: {:.2} of drafted tokens stood, {:.2} unstopped",
            standing(&default),
            standing(&always)
        );
    }
    std::fs::remove_file(&draft_path).ok();
}

#[test]
fn a_prediction_is_drafted_from_first_and_the_reply_stays_the_models() {
    let Some(gpu) = gpu() else { return };
    let target = common::model_path();
    let mut plain = session(&gpu, &target, 0);
    let prompt = plain.tokenize_prompt(
        "<|im_start|>user\nRename the variable total to result in this function:\n\ndef add(a, b):\n    total = a + b\n    return total<|im_end|>\n<|im_start|>assistant\n",
    );
    let want = reply(&mut plain, &prompt, 40);
    let said = plain.tokenizer.decode(&want.0, false);
    let mut s = session(&gpu, &target, CHECK);
    s.speculation = Some(Speculation::always(Drafter::Lookup, CHECK as usize - 1));
    // Predicted right (the reply itself), predicted wrong in places (the edit as asked, which the
    // model's reply may not make), and not at all: the reply is the model's each time.
    let asked = "def add(a, b):\n    result = a + b\n    return result\n";
    for (prediction, right) in [
        (Some(said.as_str()), true),
        (Some(asked), false),
        (None, false),
    ] {
        if let Some(text) = prediction {
            s.predict(text);
        }
        let mut sampler = Sampler::new(SamplerConfig::greedy());
        sampler.log_probs = Some(2);
        let c = s
            .complete(&prompt, Reply::new(40, &[]), &mut sampler, &mut |_| true)
            .block_on()
            .unwrap();
        let name = format!("prediction {prediction:?}");
        assert_same_reply(&name, &want, &(c.tokens, c.log_probs));
        let Some(p) = c.prediction else {
            assert!(prediction.is_none(), "{name}: not counted");
            continue;
        };
        assert!(prediction.is_some(), "a prediction outlived its reply");
        eprintln!("{name}: {} kept, {} not", p.accepted, p.rejected);
        if right {
            // All but the tokens where the reply's own tokenization parts from the text's.
            assert!(p.accepted >= want.0.len() * 3 / 4, "{name}: {p:?}");
        } else {
            assert!(
                p.accepted + p.rejected > 0,
                "{name}: nothing drafted from it"
            );
        }
    }
}

#[test]
fn a_draft_model_of_another_vocabulary_is_refused_naming_the_token() {
    let smollm2 = common::tokenizer_of(&common::model_path());
    let qwen = common::tokenizer_of(&data("models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"));
    assert!(wick::speculate::same_vocabulary(&smollm2, &smollm2).is_ok());
    let e = wick::speculate::same_vocabulary(&smollm2, &qwen)
        .unwrap_err()
        .to_string();
    assert!(e.contains("differs from the model's at token 0"), "{e}");
    // A draft with more tokens than the model could propose one the model does not have.
    let e = wick::speculate::same_vocabulary(&qwen, &smollm2)
        .unwrap_err()
        .to_string();
    assert!(e.contains("token 49152"), "{e}");
}

/// Pearson's chi-square of `counts` against `chances` (counts of draws, chances summing to 1).
fn chi_square(counts: &[(u32, u32)], chances: &[(u32, f32)], draws: u32) -> f64 {
    chances
        .iter()
        .map(|&(id, p)| {
            let seen = counts.iter().find(|c| c.0 == id).map_or(0, |c| c.1) as f64;
            let expected = p as f64 * draws as f64;
            (seen - expected).powi(2) / expected
        })
        .sum()
}

#[test]
fn judged_drafts_follow_the_models_distribution() {
    // The model's chances and two drafts': another distribution over some of the same tokens and
    // one the model never picks, and lookup's certainty of one token.
    let p = vec![(3, 0.4), (7, 0.25), (1, 0.2), (9, 0.1), (4, 0.05)];
    let drafts = [
        vec![(7, 0.5), (3, 0.1), (8, 0.3), (4, 0.1)],
        vec![(9, 1.0)],
        vec![(8, 1.0)],
    ];
    const DRAWS: u32 = 20_000;
    // 99.9% of chi-square with 4 degrees of freedom.
    const LIMIT: f64 = 18.47;
    for q in &drafts {
        let mut counts: Vec<(u32, u32)> = Vec::new();
        let mut kept = 0;
        for seed in 0..DRAWS as u64 {
            let mut sampler = Sampler::new(SamplerConfig {
                seed,
                ..Default::default()
            });
            let proposed = sampler.draw(q);
            let judged = sampler.judge(&p, q, proposed);
            kept += judged.is_none() as u32;
            let token = judged.unwrap_or(proposed);
            match counts.iter_mut().find(|c| c.0 == token) {
                Some(c) => c.1 += 1,
                None => counts.push((token, 1)),
            }
        }
        assert!(
            counts.iter().all(|c| p.iter().any(|t| t.0 == c.0)),
            "a token the model never picks: {counts:?}"
        );
        let x2 = chi_square(&counts, &p, DRAWS);
        assert!(
            x2 < LIMIT,
            "draft {q:?}: chi-square {x2:.1}, counts {counts:?}"
        );
        // The chance a draft stands is the overlap of the two: sum of min(p, q).
        let overlap: f32 = p
            .iter()
            .map(|&(id, pc)| q.iter().find(|t| t.0 == id).map_or(0.0, |t| t.1.min(pc)))
            .sum();
        let rate = kept as f32 / DRAWS as f32;
        assert!(
            (rate - overlap).abs() < 0.015,
            "kept {rate}, overlap {overlap}"
        );
    }
}

//! Sampling on the GPU: a sampled step reads back the top k candidates after the repetition penalty
//! (`Engine::step_candidates`, with the row's log-sum-exp), and the sampler finishes on them. Checked against the CPU sampler over
//! the full row of logits: the same candidates at every step of a reply, the same tokens for the same
//! seed, and the same distribution over independent seeds.

use crate::common;

use common::{gpu, tiny_chat_session};
use pollster::FutureExt as _;
use std::collections::BTreeMap;
use wick::grammar::Grammar;
use wick::ops::top_k;
use wick::reply::Reply;
use wick::sampler::{Needs, Penalties, Pick, Sampler, SamplerConfig};
use wick::sampler::{SequenceStep, Want};

fn config(seed: u64) -> SamplerConfig {
    SamplerConfig {
        temperature: 1.0,
        top_k: 40,
        top_p: 0.95,
        min_p: 0.02,
        repeat_penalty: 1.5,
        presence_penalty: 0.3,
        frequency_penalty: 0.2,
        repeat_last_n: 64,
        seed,
        // A token pushed up and one pushed down, seen or not.
        logit_bias: vec![(5, 2.0), (17, -1.5)],
    }
}

/// Along a sampled reply, each step's candidates equal the CPU's top-k of that step's logits after the
/// penalty over the tokens so far, and a step reads back 8 bytes per candidate.
#[test]
fn candidates_equal_the_cpu_top_k_along_a_reply() {
    let Some(gpu) = gpu() else { return };
    let mut session = tiny_chat_session(gpu, 64).unwrap();
    let engine = &mut session.engine;
    let mut sampler = Sampler::new(config(7));
    let Needs::Candidates(k) = sampler.needs() else {
        panic!("top-k 40 runs on the GPU")
    };
    let mut history = vec![1u32];
    for pos in 0..40 {
        let token = *history.last().unwrap();
        let logits = engine.step(token, true).block_on().unwrap().unwrap();
        engine.rewind(pos);
        let pick = Pick::new(k, sampler.config.penalties(), &sampler.penalized(&history));
        // Every fourth step also the penalized row's log-sum-exp, which log-probabilities need.
        let with_sum = pos % 4 == 0;
        let read_before = engine.stats.totals.read_bytes;
        let ranked = engine
            .step_candidates(token, &pick, with_sum)
            .block_on()
            .unwrap();
        let read = engine.stats.totals.read_bytes - read_before;
        match ranked.log_sum_exp {
            Some(got) => {
                assert_eq!(read, top_k::LOG_SUM_EXP_AT + 4);
                let mut penalized = logits.clone();
                let recent = sampler.penalized(&history);
                wick::sampler::penalize(&mut penalized, &recent, sampler.config.penalties());
                let top = penalized.iter().fold(f64::MIN, |m, &l| m.max(l as f64));
                let sum: f64 = penalized.iter().map(|&l| (l as f64 - top).exp()).sum();
                let want = top + sum.ln();
                assert!(
                    (got as f64 - want).abs() < 1e-4,
                    "log-sum-exp {got} against {want}"
                );
            }
            None => assert_eq!(read, k as u64 * 8),
        }
        let got = ranked.candidates;
        let want = pick.reference(&logits);
        let ids = |c: &[(u32, f32)]| c.iter().map(|&(id, _)| id).collect::<Vec<_>>();
        assert_eq!(ids(&got), ids(&want), "position {pos}");
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g.1 - w.1).abs() <= 1e-6 * w.1.abs().max(1.0),
                "{g:?} against {w:?}"
            );
        }
        history.push(sampler.pick_from(&got));
    }
}

/// The first token of a reply sampled through `Session::complete` (the GPU's candidates, and the
/// choice among them made there as the CPU makes it: a step reads back the token) against the CPU
/// sampler over the step's full logits: the same token for the same seed, and the distribution of
/// 400 replies against the CPU's over 100 000 draws (a chi-square test at p = 0.001).
#[test]
fn sampled_tokens_follow_the_cpu_samplers_distribution() {
    check_first_tokens(config, true);
}

/// Without a top-k the token is drawn on the GPU (`ops::draw`, a Gumbel-max draw from its own
/// generator): its distribution over 400 replies against the CPU sampler's over 100 000 draws
/// (chi-square at p = 0.001), at a temperature, within min-p or top-p, after the penalty; and a
/// step reads back the token alone.
#[test]
fn tokens_drawn_on_the_gpu_follow_the_cpu_samplers_distribution() {
    let drawn = |seed| SamplerConfig {
        temperature: 0.8,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.05,
        ..config(seed)
    };
    assert_eq!(Sampler::new(drawn(0)).needs(), Needs::Drawn);
    check_first_tokens(drawn, false);
    // With top-p (cut on the GPU by halving a threshold), and without min-p.
    let top_p = |seed| SamplerConfig {
        top_p: 0.8,
        min_p: 0.0,
        ..drawn(seed)
    };
    check_first_tokens(top_p, false);
}

/// The distribution of a reply's first token drawn through `Session::complete` with `config(seed)`
/// for 400 seeds, against the CPU sampler's over the step's full logits; `same_seeds_agree`: also
/// the same token for the same seed (the same draws from the same candidates).
fn check_first_tokens(config: impl Fn(u64) -> SamplerConfig, same_seeds_agree: bool) {
    let Some(gpu) = gpu() else { return };
    let mut session = tiny_chat_session(gpu, 64).unwrap();
    // A prompt that holds the tokens the model favours after it, so the penalty matters: the text,
    // with the favourites after it added at its start until they stay the favourites.
    let mut prompt = session.tokenize_prompt("a few words to start with");
    for _ in 0..4 {
        session.engine.rewind(0);
        let logits = session.engine.prefill(&prompt).block_on().unwrap();
        let mut top: Vec<u32> = (0..logits.len() as u32).collect();
        top.sort_by(|&a, &b| logits[b as usize].total_cmp(&logits[a as usize]));
        prompt.splice(
            0..0,
            top[..3]
                .iter()
                .copied()
                .filter(|t| !prompt.contains(t))
                .collect::<Vec<_>>(),
        );
    }
    session.engine.rewind(0);
    let logits = session.engine.prefill(&prompt).block_on().unwrap();
    let end = u32::MAX; // an end-of-generation token, which a reply does not return
    let on_cpu = |session: &wick::session::Session, seed| {
        let id = Sampler::new(config(seed)).sample(&logits, &prompt);
        match session.tokenizer.is_end_of_generation(id) {
            true => end,
            false => id,
        }
    };
    let draws = 100_000u64;
    let mut cpu = BTreeMap::new();
    for seed in 0..draws {
        *cpu.entry(on_cpu(&session, 1 << 40 | seed)).or_insert(0.0) += 1.0 / draws as f64;
    }
    let n = 400u64;
    let (mut same, mut counts) = (0, BTreeMap::new());
    for seed in 0..n {
        let mut sampler = Sampler::new(config(seed));
        let reply = session
            .complete(&prompt, Reply::new(1, &[]), &mut sampler, &mut |_| true)
            .block_on()
            .unwrap();
        // The first step ran after the prompt's tokens; what it read back, the token alone.
        let read = reply.read_back_bytes;
        assert!(read == 4, "a sampled step read back {read} bytes");
        let id = reply.tokens.first().copied().unwrap_or(end);
        same += (id == on_cpu(&session, seed)) as u64;
        *counts.entry(id).or_insert(0u64) += 1;
    }
    // Equal seeds draw the same token: the candidates and the draws are the same.
    assert!(
        !same_seeds_agree || same >= n * 99 / 100,
        "{same} of {n} seeds drew the same token"
    );
    // Tokens expected fewer than 5 times share one bin.
    let mut bins: Vec<(f64, f64)> = Vec::new();
    let mut rare = (0.0, 0.0);
    for (id, &p) in &cpu {
        let seen = *counts.get(id).unwrap_or(&0) as f64;
        match p * (n as f64) < 5.0 {
            true => rare = (rare.0 + seen, rare.1 + p * n as f64),
            false => bins.push((seen, p * n as f64)),
        }
    }
    let unexpected: u64 = counts
        .iter()
        .filter(|(id, _)| !cpu.contains_key(id))
        .map(|(_, c)| c)
        .sum();
    rare.0 += unexpected as f64;
    bins.push(rare);
    let chi2: f64 = bins
        .iter()
        .map(|(seen, want)| (seen - want).powi(2) / want.max(1e-9))
        .sum();
    let df = bins.len() - 1;
    let critical = chi2_critical_0001(df);
    eprintln!("{same} of {n} seeds drew the same token; chi2 {chi2:.1}, {df} degrees of freedom (critical {critical:.1})");
    assert!(df >= 5, "the reply's first token should vary: {counts:?}");
    assert!(
        chi2 < critical,
        "chi2 {chi2:.1} >= {critical:.1}: {counts:?} against {cpu:?}"
    );
}

/// The chi-square distribution's 0.999 quantile (Wilson and Hilferty's approximation).
fn chi2_critical_0001(df: usize) -> f64 {
    let k = df as f64;
    let z = 3.090; // the normal's 0.999 quantile
    k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
}

/// Log-probabilities (`Sampler::log_probs`) of a reply's tokens and the likeliest 5 at each step,
/// against the log-softmax of the step's full row of logits on the CPU (after the same penalty):
/// through the GPU's candidates and log-sum-exp for a greedy reply (which then reads candidates, not
/// its choice) and a top-k one with a penalty, and on the CPU for a reply without top-k (the whole
/// row read back).
#[test]
fn log_probabilities_match_the_cpu_over_full_logits() {
    let Some(gpu) = gpu() else { return };
    let mut session = tiny_chat_session(gpu, 64).unwrap();
    let prompt = session.tokenize_prompt("a few words to start with");
    let greedy = SamplerConfig::greedy();
    let top_k = SamplerConfig {
        temperature: 0.8,
        top_k: 40,
        repeat_penalty: 1.3,
        seed: 3,
        ..SamplerConfig::greedy()
    };
    let whole_row = SamplerConfig {
        temperature: 0.8,
        top_k: 0,
        seed: 4,
        ..SamplerConfig::greedy()
    };
    for (label, config) in [
        ("greedy", greedy),
        ("top-k", top_k),
        ("whole row", whole_row),
    ] {
        let mut sampler = Sampler::new(config.clone());
        sampler.log_probs = Some(5);
        let reply = session
            .complete(&prompt, Reply::new(8, &[]), &mut sampler, &mut |_| true)
            .block_on()
            .unwrap();
        assert!(reply.tokens.len() >= 4, "{label}: {:?}", reply.tokens);
        assert_eq!(reply.log_probs.len(), reply.tokens.len(), "{label}");
        session.engine.rewind(0);
        let mut logits = session.engine.prefill(&prompt).block_on().unwrap();
        let mut history = prompt.clone();
        for (got, &token) in reply.log_probs.iter().zip(&reply.tokens) {
            let recent = &history[history.len().saturating_sub(config.repeat_last_n)..];
            let mut row = logits.clone();
            let penalized = Sampler::new(config.clone()).penalized(recent);
            wick::sampler::penalize(&mut row, &penalized, config.penalties());
            let log_prob = |id: u32| wick::ops::log_prob::reference(&row, id as usize);
            assert_eq!(got.token, token, "{label}");
            let want = log_prob(token);
            assert!(
                (got.log_prob as f64 - want).abs() < 1e-4,
                "{label}: {got:?} against {want}"
            );
            let ranked = wick::sampler::ranked(&row);
            let ids = |c: &[(u32, f32)]| c.iter().map(|&(id, _)| id).collect::<Vec<_>>();
            assert_eq!(ids(&got.top), ids(&ranked[..5]), "{label}");
            for &(id, lp) in &got.top {
                assert!(
                    (lp as f64 - log_prob(id)).abs() < 1e-4,
                    "{label}: {id} {lp}"
                );
            }
            history.push(token);
            logits = session
                .engine
                .step(token, true)
                .block_on()
                .unwrap()
                .unwrap();
        }
        session.reset();
    }
}

/// A grammar's mask applied on the GPU: along a reply held to a JSON schema, each step's choice is
/// the CPU's argmax over the step's logits with the tokens the grammar does not allow at -inf, and its
/// top 5 candidates the CPU's top 5 of that row; a masked greedy step reads back 4 bytes, not the row.
#[test]
fn a_grammars_mask_on_the_gpu_equals_the_cpus_along_a_reply() {
    let Some(gpu) = gpu() else { return };
    let mut session = tiny_chat_session(gpu, 64).unwrap();
    let schema = serde_json::json!({
        "type": "object",
        "properties": { "name": { "type": "string", "minLength": 24 }, "n": { "type": "integer" } },
        "required": ["name", "n"],
    });
    let mut constraint = session.constraint(&Grammar::JsonSchema(schema)).unwrap();
    let engine = &mut session.engine;
    let n_vocab = engine.n_vocab();
    let mut token = 1u32;
    let mut steps = 0;
    for pos in 0..40 {
        if constraint.is_finished() {
            break;
        }
        let logits = engine.step(token, true).block_on().unwrap().unwrap();
        engine.rewind(pos);
        let bits = constraint.allowed_bits(n_vocab).unwrap();
        let mut allowed = logits.clone();
        constraint.mask(&mut allowed).unwrap();
        let masked = |then: Want| Want::Allowed {
            bits: bits.clone(),
            then: Box::new(then),
        };
        // The top 5 allowed, then (the same position again) the choice.
        let pick = Pick::new(5, Penalties::NONE, &[]);
        let want = masked(Want::Candidates {
            pick: Box::new(pick),
            log_sum_exp: false,
        });
        let SequenceStep::Candidates(ranked) =
            engine.step_wanted(&[token], &want).block_on().unwrap()
        else {
            panic!("candidates were asked for")
        };
        engine.rewind(pos);
        let ids = |c: &[(u32, f32)]| c.iter().map(|&(id, _)| id).collect::<Vec<_>>();
        let cpu = pick.reference(&allowed);
        assert_eq!(ids(&ranked.candidates), ids(&cpu), "position {pos}");
        let read_before = engine.stats.totals.read_bytes;
        let got = engine
            .step_wanted(&[token], &masked(Want::Choice))
            .block_on();
        assert_eq!(engine.stats.totals.read_bytes - read_before, 8);
        let SequenceStep::Choice { id: choice, chance } = got.unwrap() else {
            panic!("the choice was asked for")
        };
        assert_eq!(choice, wick::sampler::argmax(&allowed), "position {pos}");
        // Its chance: the masked row's softmax at it, in f64 on the CPU.
        let top = allowed[choice as usize] as f64;
        let sum: f64 = allowed.iter().map(|&v| (v as f64 - top).exp()).sum();
        let chance = chance.expect("a greedy choice's chance") as f64;
        assert!(
            (chance - 1.0 / sum).abs() <= 1e-4 / sum,
            "position {pos}: chance {chance}, {} on the CPU",
            1.0 / sum
        );
        assert!(
            bits[choice as usize / 32] >> (choice % 32) & 1 == 1,
            "an allowed token"
        );
        constraint.accept(choice).unwrap();
        token = choice;
        steps += 1;
    }
    assert!(steps >= 8, "{steps} steps of the grammar");
}

//! A reply's steps a step ahead (`Engine::submit_step`): where the GPU chooses each token alone, the
//! step after a token is submitted before that token is read back, its token copied on the GPU. The
//! replies are checked against the same steps one at a time (`Engine::step_wanted`, which reads
//! each token back before the next step is recorded), greedy and sampled on the GPU with a seed,
//! token for token; and a reply that ends leaves no step behind it. A server's slot stepping alone
//! steps ahead the same way, and takes the step back when another slot joins it; slots stepping
//! together in one pass step ahead as a pass, each row's token its own row's choice.

use crate::common;

use common::{gpu, model_path};
use pollster::FutureExt as _;
use wick::engine::{Engine, LoadOptions};
use wick::gguf::FileSource;
use wick::reply::Reply;
use wick::sampler::{Sampler, SamplerConfig};
use wick::session::Session;
use wick::slots::{SlotStep, Slots};

const TOKENS: usize = 12;

/// The samplers whose choices the GPU makes alone: greedy, a sample drawn from the whole row, and
/// one chosen among the top 40 (top-p, min-p).
fn configs() -> [(&'static str, SamplerConfig); 3] {
    let sampled = SamplerConfig {
        temperature: 0.9,
        seed: 11,
        ..Default::default()
    };
    [
        ("greedy", SamplerConfig::greedy()),
        (
            "drawn",
            SamplerConfig {
                top_k: 0,
                ..sampled.clone()
            },
        ),
        ("chosen", sampled),
    ]
}

#[test]
fn steps_ahead_pick_what_steps_one_at_a_time_pick() {
    let Some(gpu) = gpu() else { return };
    let source = FileSource::open(model_path()).unwrap();
    let options = LoadOptions {
        n_ctx: 128,
        ..Default::default()
    };
    let mut s = Session::load(gpu, &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    assert!(s.engine.steps_ahead());
    let prompt = s.tokenize_prompt("Once upon a time, in a small village by the sea,");
    for (name, config) in configs() {
        let mut sampler = Sampler::new(config.clone());
        assert!(sampler.chooses_on_gpu(), "{name}");
        let before = s.engine.stats.totals;
        let reply = Reply::new(TOKENS, &[]);
        let ahead = s
            .complete(&prompt, reply, &mut sampler, &mut |_| true)
            .block_on()
            .unwrap();
        let totals = s.engine.stats.totals - before;
        // The first token comes from the prompt's last run; the steps after it run ahead but the
        // first and the last, and no step runs for the token after the last.
        assert_eq!(totals.ahead as usize, TOKENS - 2, "{name}: steps ahead");
        assert_eq!(
            totals.tokens as usize,
            prompt.len() + TOKENS - 1,
            "{name}: tokens run"
        );

        // The same reply one step at a time, as the session ran it before steps went ahead: each
        // step's want (and its draw from the seeded generator) in the same order.
        s.reset();
        let mut sampler = Sampler::new(config);
        let last_run = s.engine.prompt_end(&prompt).unwrap();
        s.engine.feed(&prompt[..last_run]).block_on().unwrap();
        let mut tokens = Vec::new();
        let mut run: Vec<u32> = prompt[last_run..].to_vec();
        let mask_time = &mut Default::default();
        while tokens.len() < TOKENS {
            let want = sampler.want(&[], s.engine.n_vocab(), mask_time).unwrap();
            let step = s.engine.step_wanted(&run, &want).block_on().unwrap();
            let (next, _) = sampler.pick_from_step(step, &[], mask_time).unwrap();
            tokens.push(next);
            run = vec![next];
        }
        assert_eq!(ahead.tokens, tokens, "{name}: the reply one step at a time");
        s.reset();
    }
}

/// A reply that stops at a stop string leaves the step submitted after its last token unread:
/// the next reply, in the same session, continues the cache from where the first one's tokens end,
/// and equals a fresh session's.
#[test]
fn a_step_ahead_past_the_end_of_a_reply_is_taken_back() {
    let Some(gpu) = gpu() else { return };
    let source = FileSource::open(model_path()).unwrap();
    let options = LoadOptions {
        n_ctx: 256,
        ..Default::default()
    };
    let load = || {
        Session::load(gpu.clone(), &source, &options, &mut |_, _| {})
            .block_on()
            .unwrap()
    };
    let mut s = load();
    let prompt = s.tokenize_prompt("The three primary colors are");
    let greedy = || Sampler::new(SamplerConfig::greedy());
    let whole = s
        .complete(&prompt, Reply::new(16, &[]), &mut greedy(), &mut |_| true)
        .block_on()
        .unwrap();
    // Stop at the text of its sixth token: the step for the seventh is already submitted then.
    let stop = s.tokenizer.decode(&whole.tokens[5..6], false);
    s.reset();
    let cut = s
        .complete(
            &prompt,
            Reply::new(16, std::slice::from_ref(&stop)),
            &mut greedy(),
            &mut |_| true,
        )
        .block_on()
        .unwrap();
    assert!(
        cut.tokens.len() < whole.tokens.len(),
        "{stop:?} stopped nothing"
    );
    let pos = s.engine.pos() as usize;
    assert_eq!(
        pos,
        prompt.len() + cut.tokens.len() - 1,
        "the cache's positions"
    );
    // The conversation goes on after the cut reply: the same as in a fresh session.
    let mut on = prompt.clone();
    on.extend(&cut.tokens);
    on.extend(s.tokenizer.encode(" and", false));
    let go_on = |s: &mut Session| {
        s.complete(&on, Reply::new(8, &[]), &mut greedy(), &mut |_| true)
            .block_on()
            .unwrap()
    };
    let after = go_on(&mut s);
    assert!(after.prompt_processed < on.len(), "the cache was reused");
    assert_eq!(after.tokens, go_on(&mut load()).tokens);
}

/// A server's slot stepping alone (`Slots::step`) steps ahead as a session's reply does: its replies
/// equal the same slot's steps one at a time (`SlotStep::ahead` false), greedy and sampled on the
/// GPU with a seed, token for token. A second slot joining mid-reply takes the step submitted ahead
/// back, its draw given back to the first slot's sampler: the first slot's seeded reply goes on as
/// it would have alone, and the second's is its own alone.
#[test]
fn a_slot_stepping_alone_steps_ahead_and_one_joining_takes_the_step_back() {
    let Some(gpu) = gpu() else { return };
    let source = FileSource::open(model_path()).unwrap();
    let options = LoadOptions {
        n_ctx: 256,
        sequences: 2,
        ..Default::default()
    };
    let mut s = Session::load(gpu, &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    let mut slots = Slots::new(&s.engine);
    let prompts = [
        s.tokenize_prompt("Once upon a time, in a small village by the sea,"),
        s.tokenize_prompt("The three primary colors are"),
    ];
    for (name, config) in configs() {
        let alone = |s: &mut Session, slots: &mut Slots, slot: usize, ahead: bool| {
            let first = begin_slot(slots, &mut s.engine, slot, &prompts[slot]);
            let mut sampler = Sampler::new(config.clone());
            let before = s.engine.stats.totals;
            let mut tokens = vec![];
            let mut token = first;
            while tokens.len() < TOKENS {
                // As a server asks: no step ahead after a reply's last token.
                let go_on = ahead && tokens.len() + 1 < TOKENS;
                token = step(s, slots, &mut [(slot, token, &mut sampler)], go_on)[0];
                tokens.push(token);
            }
            (tokens, (s.engine.stats.totals - before).ahead as usize)
        };
        let (one_at_a_time, none) = alone(&mut s, &mut slots, 0, false);
        assert_eq!(none, 0, "{name}");
        let (ahead, steps_ahead) = alone(&mut s, &mut slots, 0, true);
        assert_eq!(ahead, one_at_a_time, "{name}: the reply a step ahead");
        // The first step runs the prompt's last token; each after it went ahead.
        assert_eq!(steps_ahead, TOKENS - 1, "{name}: steps ahead");

        // Slot 0 alone a third of its reply, then slot 1 beside it: drawn from the whole row, where
        // a draw not given back would shift every draw after it.
        if name != "drawn" {
            continue;
        }
        let (second, _) = alone(&mut s, &mut slots, 1, false);
        let first = begin_slot(&mut slots, &mut s.engine, 0, &prompts[0]);
        let mut samplers = [Sampler::new(config.clone()), Sampler::new(config.clone())];
        let mut got = [vec![], vec![]];
        let mut next = [first, 0];
        while got[0].len() < TOKENS / 3 {
            next[0] = step(
                &mut s,
                &mut slots,
                &mut [(0, next[0], &mut samplers[0])],
                true,
            )[0];
            got[0].push(next[0]);
        }
        next[1] = begin_slot(&mut slots, &mut s.engine, 1, &prompts[1]);
        while got[1].len() < TOKENS {
            let [a, b] = &mut samplers;
            let picked = step(
                &mut s,
                &mut slots,
                &mut [(0, next[0], a), (1, next[1], b)],
                true,
            );
            for slot in 0..2 {
                if got[slot].len() < TOKENS {
                    next[slot] = picked[slot];
                    got[slot].push(picked[slot]);
                }
            }
        }
        assert_eq!(
            got[0][..TOKENS],
            one_at_a_time,
            "{name}: slot 0 after slot 1 joined"
        );
        assert_eq!(got[1], second, "{name}: slot 1 beside slot 0");
    }
}

/// Slots stepping together in one pass of the parallel plan step ahead too: the pass after a step is
/// submitted before the step is read back, each row's token copied on the GPU from its own row's
/// choice. Three slots' replies (each at its own rows of the cache, each sampler its own seed)
/// equal the same steps each read back before the next (`SlotStep::ahead` false), greedy and
/// sampled on the GPU, token for token, every pass after the first a step ahead.
#[test]
fn slots_stepping_together_step_ahead_in_one_pass() {
    let Some(gpu) = gpu() else { return };
    let source = FileSource::open(model_path()).unwrap();
    let options = LoadOptions {
        n_ctx: 384,
        sequences: 3,
        ..Default::default()
    };
    let mut s = Session::load(gpu, &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    // One pass whatever the timings say: a CPU-backed adapter measures passes of one slot each
    // faster, and would not step together at all.
    s.engine.set_steps_together(Some(true));
    let mut slots = Slots::new(&s.engine);
    let prompts = [
        "Once upon a time, in a small village by the sea,",
        "The three primary colors are",
        "def fibonacci(n):",
    ]
    .map(|p| s.tokenize_prompt(p));
    for (name, config) in configs() {
        let together = |s: &mut Session, slots: &mut Slots, ahead: bool| {
            let mut next: Vec<u32> = (0..3)
                .map(|i| begin_slot(slots, &mut s.engine, i, &prompts[i]))
                .collect();
            let mut samplers: Vec<Sampler> = (0..3u64)
                .map(|i| {
                    Sampler::new(SamplerConfig {
                        seed: config.seed + i,
                        ..config.clone()
                    })
                })
                .collect();
            let before = s.engine.stats.totals;
            let mut got = vec![vec![]; 3];
            while got[0].len() < TOKENS {
                let go_on = ahead && got[0].len() + 1 < TOKENS;
                let mut steps: Vec<(usize, u32, &mut Sampler)> = (samplers.iter_mut())
                    .enumerate()
                    .map(|(i, sampler)| (i, next[i], sampler))
                    .collect();
                let picked = step(s, slots, &mut steps, go_on);
                for (i, &token) in picked.iter().enumerate() {
                    next[i] = token;
                    got[i].push(token);
                }
            }
            (got, (s.engine.stats.totals - before).ahead as usize)
        };
        let (read_back, none) = together(&mut s, &mut slots, false);
        assert_eq!(none, 0, "{name}");
        let (ahead, steps_ahead) = together(&mut s, &mut slots, true);
        assert_eq!(ahead, read_back, "{name}: the replies a step ahead");
        assert_eq!(steps_ahead, TOKENS - 1, "{name}: passes ahead");
    }
}

/// Sets `slot` to read `prompt` and reads it: the token its first step runs.
fn begin_slot(slots: &mut Slots, engine: &mut Engine, slot: usize, prompt: &[u32]) -> u32 {
    let (first, _) = slots.begin(slot, prompt).unwrap();
    while slots.reading(slot) {
        slots.read_chunks(engine, &[slot]).block_on().unwrap();
    }
    first
}

/// One step of the slots in `steps` (slot, token, sampler), plain; the token each picked.
fn step(
    s: &mut Session,
    slots: &mut Slots,
    steps: &mut [(usize, u32, &mut Sampler)],
    ahead: bool,
) -> Vec<u32> {
    let mut steps: Vec<SlotStep> = (steps.iter_mut())
        .map(|(slot, token, sampler)| SlotStep {
            slot: *slot,
            token: *token,
            draft: Default::default(),
            sampler,
            ahead,
        })
        .collect();
    let picked = slots.step(&mut s.engine, &mut steps, &|_| false).block_on();
    (picked.unwrap().iter()).map(|p| p.tokens[0].0).collect()
}

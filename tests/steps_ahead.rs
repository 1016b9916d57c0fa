//! A reply's steps a step ahead (`Engine::submit_step`): where the GPU chooses each token alone, the
//! step after a token is submitted before that token is read back, its token copied on the GPU. The
//! replies are checked against the same steps one at a time (`Engine::step_wanted`, which reads
//! each token back before the next step is recorded), greedy and sampled on the GPU with a seed,
//! token for token; and a reply that ends leaves no step behind it.

mod common;

use common::{gpu, model_path};
use pollster::FutureExt as _;
use wick::engine::LoadOptions;
use wick::gguf::FileSource;
use wick::reply::Reply;
use wick::sampler::{Sampler, SamplerConfig};
use wick::session::Session;

const TOKENS: usize = 24;

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

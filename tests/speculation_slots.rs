//! Speculative decoding in a server's parallel slots: each request's reply equals its plain reply,
//! drafting by lookup or with a draft model the slots share.

use crate::common;

use common::gpu;
use common::speculation::{assert_same_reply, requantized, session, CHECK};
use pollster::FutureExt as _;
use std::path::Path;
use std::sync::Arc;
use wick::engine::LoadOptions;
use wick::gguf::FileSource;
use wick::gpu::Gpu;
use wick::grammar::Grammar;
use wick::reply::Reply;
use wick::sampler::{Sampler, SamplerConfig, TokenLogProb};
use wick::session::Session;
use wick::slots::{DraftFor, DraftSlots, SlotStep, Slots};
use wick::speculate::{self, Draft, DraftLimits, DraftModel};

/// A server's parallel slots drafting by lookup (`Slots::step` with drafts, as `serve --parallel
/// --lookup` runs them): two requests at once, each slot's token and draft in one pass, each reply
/// the request's plain reply, the second held to JSON by a grammar that masks its drafts. A slot
/// whose lookup found nothing runs its token beside the other's draft. Then again with each step's
/// attention split over the keys from position 8 on, a check's too (a GPU's way deep into a
/// context), so that the plans of four, eight and all ten rows run their split forms on the one
/// scratch the ten rows size.
#[test]
fn parallel_slots_drafting_by_lookup_give_each_request_its_plain_reply() {
    let Some(gpu) = gpu() else { return };
    parallel_slots_give_plain_replies(&gpu, None);
    gpu.set_split_attention_from(8);
    gpu.set_splits_steps(true);
    parallel_slots_give_plain_replies(&gpu, None);
}

/// The same with a draft model shared by the slots (`DraftSlots`, as `serve --parallel --draft`
/// runs it): SmolLM2 requantized to Q4_0, a sequence for each slot, decoding both slots' drafts
/// together and going back past the tokens that fell.
#[test]
fn parallel_slots_drafting_with_a_draft_model_give_each_request_its_plain_reply() {
    let Some(gpu) = gpu() else { return };
    let draft = requantized(&common::model_path());
    parallel_slots_give_plain_replies(&gpu, Some(&draft));
    std::fs::remove_file(draft).ok();
}

/// Two requests at once through two slots, drafting by lookup or with the draft model in
/// `draft_file`: each reply equals the request's plain reply.
fn parallel_slots_give_plain_replies(gpu: &Arc<Gpu>, draft_file: Option<&Path>) {
    let target = common::model_path();
    let mut plain = session(gpu, &target, 0);
    let prompts: Vec<Vec<u32>> = [
        "<|im_start|>user\nRename the variable total to result in this function:\n\ndef add(a, b):\n    total = a + b\n    return total<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>user\nName three colors as JSON, each with its name as a key.<|im_end|>\n<|im_start|>assistant\n",
    ]
    .iter()
    .map(|p| plain.tokenize_prompt(p))
    .collect();
    let sampler = |s: &mut Session, json: bool| {
        let mut sampler = Sampler::new(SamplerConfig::greedy());
        sampler.log_probs = Some(2);
        if json {
            sampler.constraint = Some(s.constraint(&Grammar::JsonObject).unwrap());
        }
        sampler
    };
    let wants: Vec<(Vec<u32>, Vec<TokenLogProb>)> = (prompts.iter().enumerate())
        .map(|(i, prompt)| {
            let mut sampler = sampler(&mut plain, i == 1);
            let c = plain
                .complete(prompt, Reply::new(20, &[]), &mut sampler, &mut |_| true)
                .block_on()
                .unwrap();
            (c.tokens, c.log_probs)
        })
        .collect();
    let options = LoadOptions {
        n_ctx: 512,
        batch: Some(16),
        sequences: 2,
        check_tokens: 2 * CHECK,
        ..Default::default()
    };
    let source = FileSource::open(&target).unwrap();
    let mut s = Session::load(gpu.clone(), &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    let mut draft_model = draft_file.map(|file| {
        let options = LoadOptions {
            check_tokens: 0,
            ..options.clone()
        };
        let source = FileSource::open(file).unwrap();
        let model = DraftModel::load(gpu.clone(), &source, &options, &s.tokenizer, &mut |_, _| {})
            .block_on()
            .unwrap();
        DraftSlots::new(model)
    });
    // Two slots' checks load more rows than a step's eight: their steps of up to four and up to
    // eight rows take plans of their own, not the plan of all ten (its products in tiles).
    assert_eq!(s.engine.step_plan_rows(), [4, 8, 2 * CHECK]);
    let mut slots = Slots::new(&s.engine);
    let (mut next, _) = common::begin_slots(&mut slots, &mut s.engine, &prompts);
    let mut samplers: Vec<Sampler> = (0..2).map(|i| sampler(&mut s, i == 1)).collect();
    let mut got: Vec<(Vec<u32>, Vec<TokenLogProb>)> = vec![Default::default(); 2];
    let (mut drafted, mut stood, mut mixed) = (0, 0, 0);
    let n_vocab = s.engine.n_vocab();
    let tokenizer = &s.tokenizer;
    let ends = |token| tokenizer.is_end_of_generation(token);
    let mut mask_time = Default::default();
    while (0..2).any(|i| got[i].0.len() < wants[i].0.len()) {
        let going: Vec<usize> = (0..2)
            .filter(|&i| got[i].0.len() < wants[i].0.len())
            .collect();
        let mut limits = DraftLimits {
            n_vocab,
            ends: &ends,
            mask_time: &mut mask_time,
        };
        let mut samplers: Vec<&mut Sampler> = samplers.iter_mut().collect();
        let drafts: Vec<Draft> = match &mut draft_model {
            None => (going.iter())
                .map(|&i| {
                    let context = [slots.cached(i), &[next[i]]].concat();
                    let proposed = speculate::lookup(&context, CHECK as usize - 1);
                    let sampler = &mut *samplers[i];
                    let mut draft = Draft::start(sampler, &mut limits).unwrap();
                    draft.take_all(&proposed, sampler, &mut limits).unwrap();
                    draft
                })
                .collect(),
            Some(model) => {
                let mut wanted: Vec<DraftFor> = (samplers.iter_mut().enumerate())
                    .filter(|(i, _)| going.contains(i))
                    .map(|(i, sampler)| DraftFor {
                        slot: i,
                        cached: slots.cached(i),
                        token: next[i],
                        n: CHECK as usize - 1,
                        sampler,
                        // One slot's draft stops where it is unsure, the other's goes on.
                        min_chance: [0.0, speculate::DRAFT_MIN_CHANCE][i],
                    })
                    .collect();
                model.draft(&mut wanted, &mut limits).block_on().unwrap()
            }
        };
        let mut steps = Vec::new();
        for ((i, sampler), draft) in (samplers.into_iter().enumerate())
            .filter(|(i, _)| going.contains(i))
            .zip(drafts)
        {
            drafted += draft.tokens.len();
            steps.push(SlotStep {
                slot: i,
                token: next[i],
                draft,
                sampler,
                ahead: true,
            });
        }
        let empty = steps.iter().filter(|s| s.draft.tokens.is_empty()).count();
        mixed += (empty > 0 && empty < steps.len()) as usize;
        let slots_stepped: Vec<usize> = steps.iter().map(|s| s.slot).collect();
        let picked = slots
            .step(&mut s.engine, &mut steps, &ends)
            .block_on()
            .unwrap();
        for (i, picked) in slots_stepped.into_iter().zip(picked) {
            stood += picked.stood;
            for (token, log_prob) in picked.tokens {
                if got[i].0.len() < wants[i].0.len() {
                    got[i].0.push(token);
                    got[i].1.push(log_prob.unwrap());
                }
                next[i] = token;
            }
        }
    }
    eprintln!("{drafted} drafted, {stood} stood; {mixed} passes with a draft beside a plain step");
    assert!(stood > 0, "no drafted token stood");
    // A draft model close to the model drafts mostly what it picks, where its slots hold the
    // slots' tokens at their places (not, say, a token behind, or a fallen draft's).
    if draft_file.is_some() {
        assert!(
            2 * stood > drafted,
            "{stood} of {drafted} drafted tokens stood"
        );
    }
    for i in 0..2 {
        assert_same_reply(&format!("slot {i}"), &wants[i], &got[i]);
    }
}

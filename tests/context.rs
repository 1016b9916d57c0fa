//! A full context: decoding up to the limit computes what llama.cpp computes, nothing runs past it, and a
//! chat that outgrows it either stops there or drops its oldest turns and goes on.

use crate::common;

use common::fidelity::{check_greedy, Tolerance};
use common::{gpu, greedy, model_path, options, tiny_chat_session};
use pollster::FutureExt as _;
use serde_json::Value;
use wick::chat_template::{ChatMessage, Extras};
use wick::engine::Engine;
use wick::gguf::FileSource;
use wick::reply::FinishReason;
use wick::reply::Reply;
use wick::session::{Overflow, Session};
use wick::Error;

/// As in tests/generation.rs: llama.cpp's 8-bit activations put its logits up to about 0.9 away.
const LLAMA_CPP: Tolerance = Tolerance {
    logit: 1.0,
    clear_gap: 1.0,
};

fn message(role: &str, content: &str) -> ChatMessage {
    ChatMessage::new(role, content)
}

#[test]
fn decoding_to_a_full_context_matches_llama_cpp_and_stops_there() {
    let Some(gpu) = gpu() else { return };
    let golden: Value =
        serde_json::from_str(include_str!("goldens/llama.cpp/smollm2-q4_1-greedy.json")).unwrap();
    let mut record = golden["records"][0].clone();
    let prompt: Vec<u32> = record["prompt_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let n_ctx = prompt.len() as u32 + 20;
    let source = FileSource::open(model_path()).unwrap();

    // Teacher-forced on llama.cpp's tokens until every position of the context is used.
    let mut engine = Engine::load(gpu.clone(), &source, &options(n_ctx), &mut |_, _| {})
        .block_on()
        .unwrap();
    let steps = record["steps"].as_array_mut().unwrap();
    steps.truncate(n_ctx as usize - prompt.len() + 1);
    let agreement = check_greedy(&mut engine, &record, LLAMA_CPP);
    assert_eq!(engine.pos(), n_ctx);
    eprintln!("up to the full context of {n_ctx}: {agreement:?}");
    let past = engine.step(0, true).block_on();
    assert!(
        matches!(past, Err(Error::ContextFull(n)) if n == n_ctx),
        "{past:?}"
    );
    drop(engine);

    // Generation ends with the last token the context can give logits for.
    let mut session = Session::load(gpu, &source, &options(n_ctx), &mut |_, _| {})
        .block_on()
        .unwrap();
    let reply = session
        .complete(&prompt, Reply::new(1000, &[]), &mut greedy(), &mut |_| true)
        .block_on()
        .unwrap();
    assert_eq!(reply.finish, FinishReason::ContextFull);
    assert_eq!(reply.tokens.len(), n_ctx as usize - prompt.len() + 1);
}

/// A reply cut at max_tokens runs its prompt and one step per token after the first, and no step
/// for the token after the last.
#[test]
fn a_reply_cut_at_max_tokens_runs_nothing_past_it() {
    let Some(gpu) = gpu() else { return };
    let source = FileSource::open(model_path()).unwrap();
    let mut session = Session::load(gpu, &source, &options(64), &mut |_, _| {})
        .block_on()
        .unwrap();
    let prompt = session.tokenize_prompt("The capital of France is");
    let before = session.engine.stats.totals.tokens;
    let reply = session
        .complete(&prompt, Reply::new(5, &[]), &mut greedy(), &mut |_| true)
        .block_on()
        .unwrap();
    assert_eq!(reply.finish, FinishReason::Length);
    assert_eq!(reply.tokens.len(), 5);
    let run = session.engine.stats.totals.tokens - before;
    assert_eq!(run as usize, prompt.len() + 4, "tokens run");
}

fn tiny_session(n_ctx: u32) -> Option<Session> {
    Some(tiny_chat_session(gpu()?, n_ctx).unwrap())
}

fn rendered_len(session: &Session, messages: &[ChatMessage]) -> usize {
    session
        .tokenize_prompt(&session.chat_prompt(messages, &Extras::default()).unwrap())
        .len()
}

fn conversation() -> Vec<ChatMessage> {
    vec![
        message("system", "Be terse."),
        message("user", "one two three four"),
        message("assistant", "five six"),
        message("user", "seven eight nine"),
        message("assistant", "ten"),
        message("user", "and now?"),
    ]
}

#[test]
fn a_conversation_longer_than_the_context_is_refused_or_loses_its_oldest_turns() {
    let Some(probe) = tiny_session(512) else {
        return;
    };
    let all = conversation();
    let last = [all[0].clone(), all[5].clone()];
    let n_ctx = rendered_len(&probe, &last) as u32 + 8;
    assert!(rendered_len(&probe, &all[..]) > n_ctx as usize + 20);
    drop(probe);
    let mut session = tiny_session(n_ctx).unwrap();

    let mut messages = all.clone();
    let refused = session
        .chat(
            &mut messages,
            &Extras::default(),
            (4, &[]),
            &mut greedy(),
            Overflow::Stop,
            &mut |_| true,
        )
        .block_on();
    assert!(matches!(refused, Err(Error::ContextFull(_))), "{refused:?}");
    assert_eq!(
        messages.len(),
        all.len(),
        "Overflow::Stop keeps the history"
    );

    let reply = session
        .chat(
            &mut messages,
            &Extras::default(),
            (4, &[]),
            &mut greedy(),
            Overflow::DropOldestTurns,
            &mut |_| true,
        )
        .block_on()
        .unwrap();
    assert_eq!(messages.len(), 2, "both earlier turns had to go");
    assert_eq!(
        messages[0].content, all[0].content,
        "the system prompt stays"
    );
    assert_eq!(
        messages[1].content, all[5].content,
        "the last user message stays"
    );
    assert_eq!(reply.tokens.len(), 4);
}

#[test]
fn a_reply_that_fills_the_context_stops_or_goes_on_after_dropping_turns() {
    let Some(probe) = tiny_session(512) else {
        return;
    };
    let all = conversation();
    let prompt_len = rendered_len(&probe, &all);
    eprintln!("the conversation is {prompt_len} tokens");
    drop(probe);
    let n_ctx = prompt_len as u32 + 4;
    let mut session = tiny_session(n_ctx).unwrap();

    let mut messages = all.clone();
    let stopped = session
        .chat(
            &mut messages,
            &Extras::default(),
            (30, &[]),
            &mut greedy(),
            Overflow::Stop,
            &mut |_| true,
        )
        .block_on()
        .unwrap();
    assert_eq!(stopped.finish, FinishReason::ContextFull);
    assert_eq!(stopped.tokens.len(), 5);
    assert_eq!(messages.len(), all.len());

    let mut streamed = String::new();
    let went_on = session
        .chat(
            &mut messages,
            &Extras::default(),
            (30, &[]),
            &mut greedy(),
            Overflow::DropOldestTurns,
            &mut |piece| {
                streamed.push_str(piece.text);
                true
            },
        )
        .block_on()
        .unwrap();
    assert!(messages.len() < all.len(), "a turn was dropped");
    assert_eq!(messages[0].role, "system");
    assert!(
        went_on.tokens.len() > 5,
        "the reply went on past the full context: {:?}",
        went_on.finish
    );
    assert_eq!(
        &went_on.tokens[..5],
        &stopped.tokens[..],
        "the same greedy start"
    );
    assert_eq!(streamed, went_on.text);
    // What remained was read again: more than the one token the cached prompt needs, and the reply.
    assert!(
        went_on.prompt_processed > 1 + 5,
        "{}",
        went_on.prompt_processed
    );
}

//! The engine thread of a server with several slots (`--parallel N`): requests join between decode
//! steps and leave as they finish or as their clients go; each step runs a token of every request
//! that is generating, in one pass (`wick::slots::Slots`). New requests' prompts are read a chunk at
//! a time between steps (several prompts' pieces in one chunk), so they hold the others up by one
//! chunk at most.

use super::metrics::Metrics;
use super::worker::{self, Event, Job, Prepared, Task};
use pollster::FutureExt as _;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use wick::reply::Completion;
use wick::reply::Piece;
use wick::session::Session;
use wick::slots::{SlotStep, Slots};
use wick::speculate::Prediction;

/// A request in a slot.
struct Active {
    job: Job,
    prepared: Prepared,
    /// What its next step runs: the prompt's last token, then each one picked.
    token: u32,
    /// Prompt tokens the slot's cache did not hold.
    processed: usize,
    admitted: Instant,
    /// From admission to the first token picked.
    prompt_time: Option<Duration>,
}

/// How long a server that was idle waits after a request for others sent with it (they arrive about
/// a millisecond apart): a prompt's run costs the same for one short prompt as for several.
const GATHER: Duration = Duration::from_millis(5);

pub fn serve(mut session: Session, mut queue: mpsc::Receiver<Task>, metrics: &Metrics) {
    let mut slots = Slots::new(&session.engine);
    let mut active: Vec<Option<Active>> = (0..slots.len()).map(|_| None).collect();
    loop {
        // Take requests while a slot is free, waiting for one when nothing runs; the rest wait in
        // the queue. Requests sent together reach the queue a moment apart: a server that was idle
        // looks again a moment after the first, so that their prompts are read in one run.
        let idle = active.iter().all(Option::is_none);
        for look in [Duration::ZERO, GATHER] {
            if look > Duration::ZERO {
                match idle && active.iter().any(Option::is_none) {
                    true => std::thread::sleep(look),
                    false => break,
                }
            }
            while active.iter().any(Option::is_none) {
                let task = match active.iter().all(Option::is_none) {
                    true => match queue.blocking_recv() {
                        Some(task) => task,
                        None => return,
                    },
                    false => match queue.try_recv() {
                        Ok(task) => task,
                        Err(_) => break,
                    },
                };
                match task {
                    Task::Generate(job) => {
                        admit(&mut session, &mut slots, &mut active, *job, metrics)
                    }
                    Task::Embed {
                        request,
                        model,
                        answer,
                    } => worker::answer_embeddings(&mut session, &request, &model, answer, metrics),
                }
            }
        }
        // A client that left frees its slot now.
        for (s, a) in active.iter_mut().enumerate() {
            if a.as_ref().is_some_and(|a| a.job.events.is_closed()) {
                slots.abandon(s);
                *a = None;
                metrics.end_task();
            }
        }
        let reading: Vec<usize> = (0..slots.len())
            .filter(|&s| active[s].is_some() && slots.reading(s))
            .collect();
        if !reading.is_empty() {
            if let Err(e) = slots.read_chunks(&mut session.engine, &reading).block_on() {
                fail(&mut active, &mut slots, &reading, e, metrics);
            }
        }
        step(&mut session, &mut slots, &mut active, metrics);
    }
}

/// Prepares `job` and puts it in the free slot that holds the longest start of its prompt.
fn admit(
    session: &mut Session,
    slots: &mut Slots,
    active: &mut [Option<Active>],
    job: Job,
    metrics: &Metrics,
) {
    // A client that left while queued costs nothing.
    if job.events.is_closed() {
        return;
    }
    metrics.start_task();
    let prepared = match worker::prepare(session, &job, slots.rows() as usize) {
        Ok(prepared) => prepared,
        Err(e) => {
            let _ = job.events.send(Event::Failed(e));
            metrics.end_task();
            return;
        }
    };
    let free = |s: usize| active[s].is_none();
    let s = slots.choose(&prepared.prompt, free).expect("a free slot");
    // `prepare` refused a prompt longer than a slot.
    let (token, processed) = slots.begin(s, &prepared.prompt).expect("the prompt fits");
    active[s] = Some(Active {
        job,
        prepared,
        token,
        processed,
        admitted: Instant::now(),
        prompt_time: None,
    });
}

/// One decode step of every request whose prompt is read; each takes its token, and those that end
/// with it are answered.
fn step(
    session: &mut Session,
    slots: &mut Slots,
    active: &mut [Option<Active>],
    metrics: &Metrics,
) {
    let mut steps: Vec<SlotStep> = active
        .iter_mut()
        .enumerate()
        .filter(|(s, a)| a.is_some() && !slots.reading(*s))
        .map(|(slot, a)| {
            let a = a.as_mut().expect("filtered");
            SlotStep {
                slot,
                token: a.token,
                sampler: &mut a.prepared.sampler,
            }
        })
        .collect();
    if steps.is_empty() {
        return;
    }
    let stepped: Vec<usize> = steps.iter().map(|s| s.slot).collect();
    let picked = match slots.step(&mut session.engine, &mut steps).block_on() {
        Ok(picked) => picked,
        Err(e) => return fail(active, slots, &stepped, e, metrics),
    };
    for (s, (token, log_prob)) in stepped.into_iter().zip(picked) {
        let a = active[s].as_mut().expect("stepped");
        a.prompt_time.get_or_insert_with(|| a.admitted.elapsed());
        let room = slots.pos(s) < slots.rows();
        let (events, pieces) = (&a.job.events, &mut a.prepared.pieces);
        let mut on_text = |piece: Piece| pieces.send(events, piece);
        let sampler = &a.prepared.sampler;
        let picked = (token, log_prob);
        match a
            .prepared
            .reply
            .push(&session.tokenizer, picked, sampler, room, &mut on_text)
        {
            None => a.token = token,
            Some(finish) => answer(session, active[s].take().expect("active"), finish, metrics),
        }
    }
}

/// Sends a finished request its last events.
fn answer(session: &Session, mut a: Active, finish: wick::reply::FinishReason, metrics: &Metrics) {
    let prompt_time = a.prompt_time.unwrap_or_default();
    let (events, pieces) = (&a.job.events, &mut a.prepared.pieces);
    let mut on_text = |piece: Piece| pieces.send(events, piece);
    let completion = Completion {
        prompt_tokens: a.prepared.prompt.len(),
        prompt_processed: a.processed,
        prompt_time,
        gen_time: a.admitted.elapsed().saturating_sub(prompt_time),
        // Slots do not speculate: a prediction drafts nothing.
        prediction: a
            .job
            .prediction
            .as_ref()
            .map(|_| Prediction::new(Vec::new())),
        ..a.prepared
            .reply
            .finish(finish, &session.tokenizer, &mut on_text)
    };
    let tool_use = a.prepared.tool_use.as_ref();
    let last = worker::done(session, &a.job, tool_use, &completion, metrics);
    let _ = a.job.events.send(last);
    metrics.end_task();
}

/// Ends the requests in `failed` slots with the engine's error.
fn fail(
    active: &mut [Option<Active>],
    slots: &mut Slots,
    failed: &[usize],
    e: wick::Error,
    metrics: &Metrics,
) {
    for &s in failed {
        slots.abandon(s);
        if let Some(a) = active[s].take() {
            let _ = a
                .job
                .events
                .send(Event::Failed(worker::generation_failed(&e)));
            metrics.end_task();
        }
    }
}

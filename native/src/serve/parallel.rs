//! The engine thread of a server with several slots (`--parallel N`): requests join between decode
//! steps and leave as they finish or as their clients go; each step runs a token of every request
//! that is generating, in one pass (`wick::slots::Slots`). New requests' prompts are read a chunk at
//! a time between steps (several prompts' pieces in one chunk), so they hold the others up by one
//! chunk at most. On a server that speculates, each slot drafts, from a request's prediction first,
//! else by lookup in its prompt and reply (`--lookup`) or with the draft model (`--draft`), which
//! decodes ahead of all drafting slots at once; each draft is checked in the same pass as the others'
//! steps. Requests may carry images where the server has a projector: each image is held by the
//! engine under ids of its own, so slots reuse what their caches hold of a prompt by its tokens, and
//! a run takes an image whole.

use super::metrics::Metrics;
use super::openai::ApiError;
use super::worker::{self, Event, Job, Prepared, Task};
use pollster::FutureExt as _;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use wick::reply::Completion;
use wick::reply::Piece;
use wick::session::Session;
use wick::slots::{DraftFor, DraftSlots, SlotStep, Slots};
use wick::speculate::{Draft, DraftLimits, Drafter, Prediction, Speculation};

/// What the slots speculate with, where the server does: each slot's own speculation, and the draft
/// model they share where it drafts with one.
struct Speculating<'a> {
    per_slot: &'a mut [Option<Speculation>],
    draft_model: Option<&'a mut DraftSlots>,
}

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
    /// What the request predicts the reply says, where it does.
    prediction: Option<Prediction>,
}

/// How long a server that was idle waits after a request for others sent with it (they arrive about
/// a millisecond apart): a prompt's run costs the same for one short prompt as for several.
const GATHER: Duration = Duration::from_millis(5);

pub fn serve(mut session: Session, mut queue: mpsc::Receiver<Task>, metrics: &Metrics) {
    let mut slots = Slots::new(&session.engine);
    let mut active: Vec<Option<Active>> = (0..slots.len()).map(|_| None).collect();
    // Each slot's own speculation, where the server speculates: how often its drafts stand follows
    // its requests' text, and what its checks cost follows the steps it shares. A draft model
    // serves them all, with a sequence for each slot.
    let mut draft_model = None;
    let mut speculations: Vec<Option<Speculation>> = match session.speculation.take() {
        None => (0..slots.len()).map(|_| None).collect(),
        Some(Speculation {
            drafter,
            max,
            min_chance,
            ..
        }) => {
            let slot_drafter = || match &drafter {
                Drafter::Model(_) | Drafter::SharedModel => Drafter::SharedModel,
                Drafter::Lookup => Drafter::Lookup,
            };
            let speculations = (0..slots.len())
                .map(|_| {
                    let mut speculation = Speculation::new(slot_drafter(), max);
                    speculation.min_chance = min_chance;
                    Some(speculation)
                })
                .collect();
            if let Drafter::Model(model) = drafter {
                draft_model = Some(DraftSlots::new(*model));
            }
            speculations
        }
    };
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
        let mut speculating = Speculating {
            per_slot: &mut speculations,
            draft_model: draft_model.as_mut(),
        };
        step(
            &mut session,
            &mut slots,
            &mut active,
            &mut speculating,
            metrics,
        );
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
    // `prepare` refused a prompt longer than a slot; what is left is an image a run cannot hold.
    let (token, processed) = match slots.begin(s, &prepared.prompt) {
        Ok(begun) => begun,
        Err(e) => {
            let refused = ApiError::invalid(e.to_string(), "messages");
            let _ = job.events.send(Event::Failed(refused));
            metrics.end_task();
            return;
        }
    };
    // The images no slot holds or is to read are forgotten (but the most recent).
    session.engine.forget_images(slots.tokens());
    let prediction = (job.prediction.as_ref())
        .map(|text| Prediction::new(session.tokenizer.encode(text, false)));
    active[s] = Some(Active {
        job,
        prepared,
        token,
        processed,
        admitted: Instant::now(),
        prompt_time: None,
        prediction,
    });
}

/// One decode step of every request whose prompt is read, each with its slot's draft where it
/// speculates; each takes its tokens, and those that end with them are answered.
fn step(
    session: &mut Session,
    slots: &mut Slots,
    active: &mut [Option<Active>],
    speculating: &mut Speculating,
    metrics: &Metrics,
) {
    let stepped: Vec<usize> = (0..active.len())
        .filter(|&s| active[s].is_some() && !slots.reading(s))
        .collect();
    if stepped.is_empty() {
        return;
    }
    let (drafts, drafting) = match draft_all(session, slots, active, speculating, &stepped) {
        Ok(drafted) => drafted,
        Err(e) => return fail(active, slots, &stepped, e, metrics),
    };
    let mut steps: Vec<SlotStep> = (active.iter_mut().enumerate())
        .filter(|(s, _)| stepped.contains(s))
        .zip(drafts)
        .map(|((slot, a), draft)| {
            let a = a.as_mut().expect("stepped");
            SlotStep {
                slot,
                token: a.token,
                draft,
                sampler: &mut a.prepared.sampler,
                // The reply may take a token after the one this step picks, and the slot does not
                // speculate: a step ahead that a check then took back would cost a step (as a
                // session that speculates steps one at a time).
                ahead: a.prepared.reply.tokens_left() > 1 && speculating.per_slot[slot].is_none(),
            }
        })
        .collect();
    let proposed: Vec<(usize, bool)> = (steps.iter())
        .map(|s| (s.draft.tokens.len(), s.draft.predicted))
        .collect();
    let start = Instant::now();
    let tokenizer = &session.tokenizer;
    let ends = |token| tokenizer.is_end_of_generation(token);
    let picked = match slots
        .step(&mut session.engine, &mut steps, &ends)
        .block_on()
    {
        Ok(picked) => picked,
        Err(e) => return fail(active, slots, &stepped, e, metrics),
    };
    let took = start.elapsed().as_secs_f64();
    let any_draft = proposed.iter().any(|&(n, _)| n > 0);
    for ((s, picked), (proposed, predicted)) in stepped.into_iter().zip(picked).zip(proposed) {
        let a = active[s].as_mut().expect("stepped");
        // A pass without drafts is each slot's plain step; one with drafts, each drafting slot's
        // check (the cost it shares with the others). A slot's plain token beside others' drafts
        // measures neither.
        if proposed > 0 {
            metrics.add_drafts(1, proposed as u64, picked.stood as u64);
        }
        if let Some(speculation) = &mut speculating.per_slot[s] {
            match (proposed, a.prediction.as_mut().filter(|_| predicted)) {
                (0, _) if any_draft => {}
                (0, _) => speculation.record_step(took),
                (n, Some(p)) => speculation.record_predicted_check(p, (n, picked.stood), took),
                (n, None) => speculation.record_check(n, picked.stood, drafting, took),
            }
        }
        a.prompt_time.get_or_insert_with(|| a.admitted.elapsed());
        let last = picked.tokens.len() - 1;
        for (i, picked) in picked.tokens.into_iter().enumerate() {
            // The tokens before the last are in the cache; the last runs at the slot's next place.
            let room = i < last || slots.pos(s) < slots.rows();
            let (events, pieces) = (&a.job.events, &mut a.prepared.pieces);
            let mut on_text = |piece: Piece| pieces.send(events, piece);
            let sampler = &a.prepared.sampler;
            let token = picked.0;
            match (a.prepared.reply).push(&session.tokenizer, picked, sampler, room, &mut on_text) {
                None => a.token = token,
                Some(finish) => {
                    answer(session, active[s].take().expect("active"), finish, metrics);
                    break;
                }
            }
        }
    }
}

/// The drafts of the slots in `stepped` where the server speculates: from a request's prediction
/// first, else by lookup in its slot's tokens or by the draft model (all slots' drafts decoded
/// together), each sized by its slot's speculation and walked through its grammar; empty drafts
/// elsewhere. With them, the seconds the draft model took to decode its drafts (the slots share
/// that cost, as they share a check's).
fn draft_all(
    session: &mut Session,
    slots: &Slots,
    active: &mut [Option<Active>],
    speculating: &mut Speculating,
    stepped: &[usize],
) -> Result<(Vec<Draft>, f64), wick::Error> {
    let check_rows = session.engine.check_tokens() as usize / slots.len().max(1);
    let tokenizer = &session.tokenizer;
    let ends = |token| tokenizer.is_end_of_generation(token);
    let mut limits = DraftLimits {
        n_vocab: session.engine.n_vocab(),
        ends: &ends,
        mask_time: &mut session.engine.stats.totals.mask,
    };
    let mut drafts: Vec<Option<Draft>> = Vec::with_capacity(stepped.len());
    let mut for_model = Vec::new();
    for (s, a) in active.iter_mut().enumerate() {
        if !stepped.contains(&s) {
            continue;
        }
        let a = a.as_mut().expect("stepped");
        let Some(speculation) = &mut speculating.per_slot[s] else {
            drafts.push(Some(Draft::default()));
            continue;
        };
        // Rows for the token and its draft: within the slot's share of the pass and its context.
        let rows = check_rows.min((slots.rows() - slots.pos(s)) as usize);
        let context = [slots.cached(s), &[a.token]].concat();
        let reply_start = a.prepared.prompt.len();
        let (n, predicted) =
            speculation.next_draft(a.prediction.as_ref(), &context, reply_start, rows);
        let sampler = &mut a.prepared.sampler;
        let model = matches!(speculation.drafter, Drafter::SharedModel) && predicted.is_empty();
        let min_chance = speculation.min_chance;
        drafts.push(match (n, model) {
            (0, _) => Some(Draft::default()),
            (n, false) => Some(Draft::without_model(
                &context,
                n,
                &predicted,
                sampler,
                &mut limits,
            )?),
            (n, true) => {
                let (cached, token) = (slots.cached(s), a.token);
                for_model.push(DraftFor {
                    slot: s,
                    cached,
                    token,
                    n,
                    sampler,
                    min_chance,
                });
                None
            }
        });
    }
    let (Some(model), false) = (speculating.draft_model.as_deref_mut(), for_model.is_empty())
    else {
        return Ok((
            drafts.into_iter().map(Option::unwrap_or_default).collect(),
            0.0,
        ));
    };
    let start = Instant::now();
    let mut decoded = model
        .draft(&mut for_model, &mut limits)
        .block_on()?
        .into_iter();
    let catching_up = decoded.as_slice().first().map_or(0.0, |d| d.catching_up);
    let drafting = start.elapsed().as_secs_f64() - catching_up;
    let drafts = (drafts.into_iter())
        .map(|d| d.unwrap_or_else(|| decoded.next().expect("a draft for each")))
        .collect();
    Ok((drafts, drafting))
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
        prediction: a.prediction.take(),
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

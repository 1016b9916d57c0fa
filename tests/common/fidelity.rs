//! The near-tie method (DESIGN.md): decoding is teacher-forced on the reference's tokens; at each step
//! the reference's top logits must be matched within a tolerance, and the same token chosen wherever the
//! reference's top two are further apart than a clear gap. Elsewhere a different choice is a near tie,
//! counted but allowed.

use pollster::FutureExt as _;
use serde_json::Value;
use wick::engine::Engine;

/// How a decode compared with its reference.
#[derive(Debug, Default)]
pub struct Agreement {
    pub same: usize,
    pub near_ties: usize,
    pub max_error: f32,
}

impl Agreement {
    pub fn add(&mut self, other: &Agreement) {
        self.same += other.same;
        self.near_ties += other.near_ties;
        self.max_error = self.max_error.max(other.max_error);
    }
}

pub fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .expect("an array of ids")
        .iter()
        .map(|x| x.as_u64().expect("an id") as u32)
        .collect()
}

/// The record with its first `n` steps: the same check over a shorter reply, where a CI run cannot
/// afford the whole one on a CPU-backed adapter. `WICK_FULL_REPLIES=1` keeps every step.
pub fn first_steps(record: &Value, n: usize) -> Value {
    let mut record = record.clone();
    if std::env::var_os("WICK_FULL_REPLIES").is_none() {
        if let Some(steps) = record["steps"].as_array_mut() {
            steps.truncate(n);
        }
    }
    record
}

/// The first `n` of `records`, or all of them with `WICK_FULL_REPLIES=1` (as `first_steps`).
pub fn first_records(records: &[Value], n: usize) -> &[Value] {
    match std::env::var_os("WICK_FULL_REPLIES") {
        Some(_) => records,
        None => &records[..n.min(records.len())],
    }
}

/// How far a reference may be.
#[derive(Clone, Copy)]
pub struct Tolerance {
    /// Largest difference allowed in any of the reference's top logits.
    pub logit: f32,
    /// A gap between the reference's top two beyond which the same token must be chosen. Errors move
    /// the top logits together (they come from the same hidden state), so this can be below twice
    /// `logit`.
    pub clear_gap: f32,
}

/// Runs one golden record (`prompt_ids`, and `steps` of `{id, top: [[id, logit], ...]}`) from an empty
/// cache, panicking on the first disagreement beyond `tolerance`.
pub fn check_greedy(engine: &mut Engine, record: &Value, tolerance: Tolerance) -> Agreement {
    let name = record["prompt"].as_str().unwrap_or("record");
    engine.rewind(0);
    let mut logits = engine
        .prefill(&ids(&record["prompt_ids"]))
        .block_on()
        .unwrap();
    let steps = record["steps"].as_array().expect("steps");
    let mut agreement = Agreement::default();
    for (i, step) in steps.iter().enumerate() {
        let top: Vec<(usize, f32)> = step["top"]
            .as_array()
            .expect("top logits")
            .iter()
            .map(|p| {
                (
                    p[0].as_u64().unwrap() as usize,
                    p[1].as_f64().unwrap() as f32,
                )
            })
            .collect();
        for &(id, want) in &top {
            let err = (logits[id] - want).abs();
            agreement.max_error = agreement.max_error.max(err);
            assert!(
                err < tolerance.logit,
                "{name:?} step {i}: logit of {id} is {}, reference {want}",
                logits[id]
            );
        }
        let want = step["id"].as_u64().unwrap() as u32;
        let ours = wick::sampler::argmax(&logits);
        if ours == want {
            agreement.same += 1;
        } else {
            let gap = top[0].1 - top[1].1;
            assert!(
                gap <= tolerance.clear_gap,
                "{name:?} step {i}: chose {ours} where the reference chose {want} by a gap of {gap}"
            );
            agreement.near_ties += 1;
        }
        if i + 1 < steps.len() {
            logits = engine.step(want, true).block_on().unwrap().unwrap();
        }
    }
    agreement
}

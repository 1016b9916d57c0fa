//! GET /metrics: what the server has done and is doing, in Prometheus' text format. The engine thread
//! counts as it finishes each task; the queue's length is read off the channel when asked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Default)]
pub struct Metrics {
    /// Completions and embeddings answered (or failed after they started).
    requests: AtomicU64,
    /// Tasks the engine runs now.
    busy: AtomicU64,
    prompt_tokens: AtomicU64,
    /// Of `prompt_tokens`, those the cache already held (not run again).
    cached_tokens: AtomicU64,
    prompt_micros: AtomicU64,
    generated_tokens: AtomicU64,
    generation_micros: AtomicU64,
    /// Speculative decoding's checks, the drafted tokens they checked, and of those the ones kept.
    draft_checks: AtomicU64,
    drafted_tokens: AtomicU64,
    accepted_tokens: AtomicU64,
    /// Decode steps submitted before the step before them was read back (the engine's count).
    steps_ahead: AtomicU64,
}

/// What one generation adds.
pub struct Generated {
    pub prompt_tokens: usize,
    pub cached_tokens: usize,
    pub prompt_time: Duration,
    pub tokens: usize,
    pub time: Duration,
}

impl Metrics {
    pub fn start_task(&self) {
        self.busy.fetch_add(1, Ordering::Relaxed);
    }

    pub fn end_task(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.busy.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn add(&self, g: Generated) {
        add(&self.prompt_tokens, g.prompt_tokens as u64);
        add(&self.cached_tokens, g.cached_tokens as u64);
        add(&self.prompt_micros, g.prompt_time.as_micros() as u64);
        add(&self.generated_tokens, g.tokens as u64);
        add(&self.generation_micros, g.time.as_micros() as u64);
    }

    /// Counts checks of drafted tokens (`wick::speculate::SpeculationStats`, or its growth).
    pub fn add_drafts(&self, checks: u64, drafted: u64, accepted: u64) {
        add(&self.draft_checks, checks);
        add(&self.drafted_tokens, drafted);
        add(&self.accepted_tokens, accepted);
    }

    /// Sets the count of decode steps submitted ahead (`wick::engine::Totals::ahead`).
    pub fn set_steps_ahead(&self, n: u64) {
        self.steps_ahead.store(n, Ordering::Relaxed);
    }

    /// The text /metrics answers; `queued`: tasks waiting for the engine.
    pub fn render(&self, queued: usize) -> String {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let seconds = |micros: u64| micros as f64 / 1e6;
        let per_second = |n: u64, micros: u64| match micros {
            0 => 0.0,
            _ => n as f64 / seconds(micros),
        };
        let (prompt, cached) = (get(&self.prompt_tokens), get(&self.cached_tokens));
        let (prompt_micros, generation_micros) =
            (get(&self.prompt_micros), get(&self.generation_micros));
        let generated = get(&self.generated_tokens);
        let rows: [(&str, &str, &str, f64); 14] = [
            (
                "requests_total",
                "counter",
                "Completions and embeddings answered.",
                get(&self.requests) as f64,
            ),
            (
                "requests_processing",
                "gauge",
                "Requests the engine runs now (one at a time).",
                get(&self.busy) as f64,
            ),
            (
                "requests_deferred",
                "gauge",
                "Requests waiting for the engine.",
                queued as f64,
            ),
            (
                "prompt_tokens_total",
                "counter",
                "Prompt tokens of completions, cached ones included.",
                prompt as f64,
            ),
            (
                "prompt_tokens_cached_total",
                "counter",
                "Prompt tokens the cache already held.",
                cached as f64,
            ),
            (
                "prompt_seconds_total",
                "counter",
                "Time spent reading prompts.",
                seconds(prompt_micros),
            ),
            (
                "tokens_predicted_total",
                "counter",
                "Tokens generated.",
                generated as f64,
            ),
            (
                "tokens_predicted_seconds_total",
                "counter",
                "Time spent generating.",
                seconds(generation_micros),
            ),
            (
                "prompt_tokens_seconds",
                "gauge",
                "Prompt tokens run (not cached) per second of reading prompts.",
                per_second(prompt - cached, prompt_micros),
            ),
            (
                "predicted_tokens_seconds",
                "gauge",
                "Tokens generated per second of generating.",
                per_second(generated, generation_micros),
            ),
            (
                "draft_checks_total",
                "counter",
                "Steps that checked drafted tokens (speculative decoding).",
                get(&self.draft_checks) as f64,
            ),
            (
                "draft_tokens_total",
                "counter",
                "Drafted tokens checked.",
                get(&self.drafted_tokens) as f64,
            ),
            (
                "draft_tokens_accepted_total",
                "counter",
                "Drafted tokens kept: each saved a step.",
                get(&self.accepted_tokens) as f64,
            ),
            (
                "steps_ahead_total",
                "counter",
                "Decode steps submitted before the step before them was read back.",
                get(&self.steps_ahead) as f64,
            ),
        ];
        let mut out = String::new();
        for (name, kind, help, value) in rows {
            out += &format!(
                "# HELP wick_{name} {help}\n# TYPE wick_{name} {kind}\nwick_{name} {value}\n"
            );
        }
        out
    }
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

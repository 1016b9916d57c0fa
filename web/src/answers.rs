//! What the package's calls answer, as the page's JavaScript reads them (js/index.d.ts): a
//! reply, a profile, the model's stats, a tuning step.

use serde::Serialize;
use wick::tools::Call;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatResult {
    /// The reply's text: with tools, what is left once the calls are read out of it.
    pub text: String,
    /// The reasoning the model wrote before its answer, where its chat template marks it (empty
    /// otherwise).
    pub reasoning: String,
    /// OpenAI's finish_reason.
    pub finish_reason: &'static str,
    /// The tools the reply called, in order.
    pub tool_calls: Vec<Call>,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    /// Prompt tokens processed (the rest came from the KV cache of earlier turns).
    pub prompt_processed: usize,
    pub prompt_ms: f64,
    pub generate_ms: f64,
    /// Bytes the reply's steps copied back from the GPU for the sampler.
    pub read_back_bytes: u64,
    /// Where a generating step's time went; none where the reply ran no step after its prompt.
    pub step_ms: Option<StepMs>,
    /// The reply's log-probabilities as OpenAI's `choices[0].logprobs` (JSON text), where asked for.
    pub log_probs: Option<String>,
    /// Where the request gave a prediction: its tokens the checks kept, and those they did not.
    pub prediction: Option<PredictionTokens>,
}

#[derive(Serialize)]
pub struct PredictionTokens {
    pub accepted: usize,
    pub rejected: usize,
}

/// `Model::profile`'s answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileMs {
    pub kernels: Vec<(String, f64)>,
    pub whole_ms: f64,
    pub layer_kinds: Vec<(String, u32, f64)>,
}

/// A decode step's wall time in parts, in milliseconds, averaged over a reply's steps after its prompt.
#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "camelCase")]
pub struct StepMs {
    /// Writing the step's inputs and recording its pass.
    pub record: f64,
    /// Recording the next step's pass while the GPU ran this one (`Totals::record_ahead`): in
    /// none of the parts a step waits on.
    pub record_ahead: f64,
    /// The submit call (in a browser it hands the commands to the GPU process).
    pub submit: f64,
    /// From the submit to the values read back: the GPU's work, then the map.
    pub wait: f64,
    /// The grammar's mask of allowed tokens and its move past the token picked (0 unconstrained).
    pub mask: f64,
    /// Everything else between two steps: sampling, detokenizing, streaming the text to the page.
    pub other: f64,
}

impl StepMs {
    pub fn of(steps: &wick::engine::Totals, gen_time: std::time::Duration) -> Option<StepMs> {
        let runs = steps.runs as f64;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3 / runs;
        (steps.runs > 0).then(|| StepMs {
            record: ms(steps.record),
            record_ahead: ms(steps.record_ahead),
            submit: ms(steps.submit),
            wait: ms(steps.wait),
            mask: ms(steps.mask),
            other: ms(gen_time) - ms(steps.time) - ms(steps.mask),
        })
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub adapter: String,
    pub architecture: String,
    pub n_ctx: u32,
    pub dispatches_per_token: u32,
    pub submits_per_token: u32,
    pub weight_bytes_per_token: u64,
    /// Bytes a token reads from the model file itself: its rows of a table left off the GPU
    /// (Gemma 4's per-layer embeddings); 0 for most models.
    pub row_bytes_per_token: u64,
    /// This model's shapes with tuned kernels on this adapter: matvecs', and prompt recurrences'
    /// and attentions' forms.
    pub tuned_shapes: usize,
    /// This model's shapes with none yet: what `tune` would time.
    pub untuned_shapes: usize,
    /// The fewest lanes of the device's subgroups, where kernels may use them (the tuner offers
    /// those that pass its check on the device); absent where the device has none.
    pub subgroup_size: Option<u32>,
    /// Of the last reply: tokens per second generating, and over the prompt.
    pub tokens_per_second: Option<f64>,
    pub prompt_tokens_per_second: Option<f64>,
    /// Of the last request: its prompt's tokens, and how many were run (the rest were cached).
    pub last_prompt_tokens: Option<usize>,
    pub last_prompt_processed: Option<usize>,
    /// Of the last reply: bytes copied back from the GPU per token, for the sampler (the top
    /// candidates, the greedy choice, or a whole row of logits where the sampler needs it).
    pub read_back_bytes_per_token: Option<f64>,
    /// Of the last reply: where a generating step's time went.
    pub step_ms: Option<StepMs>,
    /// The wasm heap: it holds one piece of a tensor at a time, never the model.
    pub wasm_memory_bytes: f64,
    /// Where the model speculates (`Model::draft`, `Model::lookup`): what its checks so far kept.
    pub speculation: Option<Speculated>,
}

/// What a speculating model's checks proposed and kept, over its replies so far.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Speculated {
    pub checks: u64,
    pub proposed: u64,
    pub accepted: u64,
    pub tokens_per_check: f64,
    /// What the sizing of drafts has measured, in milliseconds: a plain step, a check by its rows,
    /// a drafted token (null where not yet).
    pub step_ms: Option<f64>,
    pub check_ms: Vec<(usize, f64)>,
    pub drafted_token_ms: Option<f64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TuneStep {
    pub shapes: usize,
    pub shapes_done: usize,
    pub candidates: usize,
    pub timed: usize,
    pub finished: bool,
    pub tuning: Option<String>,
}

//! What a loaded model hands back (`Forward`: the plans of its runs and the buffers they talk
//! through), and the plans every architecture makes the same way from its layers: a prompt's chunk,
//! the scoring, hidden-state and parallel decode runs (`prompt_plans`), and the steps deep into a
//! context whose attention splits over the keys (`split_scratch`, `split_step_plan`).

use super::per_layer_embd;
use crate::gpu::{scratch_buffer, Gpu, Plan, StepInput, PAIR_TOKENS, STEP_TOKENS_MAX};
use crate::ops::allowed::Allowed;
use crate::Error;

/// A loaded model: the plans of its runs and the buffers they talk through.
pub struct Forward {
    /// One token through the whole model, ending in its logits: a decode step.
    pub decode: Plan,
    /// As `decode`, for positions from the first number on: attention split over the sequence, which
    /// a long cache needs to keep a large GPU busy. None where the context never gets that long.
    pub decode_long: Option<(u32, Plan)>,
    /// Up to `step.batch` tokens of a prompt through the layers, filling the KV cache; no logits.
    /// None where the load asked for one token at a time.
    pub prefill: Option<Plan>,
    /// Recorded after `prefill` in its pass where a prompt's last chunk ends the prompt: the chunk's
    /// last token through the final norm and the head into `logits`, as a decode step's end, so
    /// the first reply token is picked without a step of its own. With `prefill`.
    pub prompt_head: Option<Plan>,
    /// Up to `plan.batch` tokens through the layers and the head, each scored by the log-probability of
    /// its successor. Only where the load asked for it (perplexity), since it holds a row of logits per
    /// token.
    pub score: Option<Score>,
    /// Up to `hidden.plan.batch` tokens through the layers and the final norm, each token's state
    /// left for embeddings to pool. Only where the load asked for embeddings.
    pub hidden: Option<Hidden>,
    /// Tokens at places of their own through the whole model, each with its logits: a decode step of
    /// parallel requests (a token of each sequence), or a speculative step's check (the tokens of one
    /// sequence at consecutive positions). Only where the load asked for more than one row.
    pub parallel: Option<Parallel>,
    /// The position and tokens of the next run, written before each submit.
    pub step: StepInput,
    /// (n_logits) f32, written by the step.
    pub logits: wgpu::Buffer,
    /// The tokens a decode step's choice and candidates may take, a row per sequence.
    pub allowed: Allowed,
    /// Tokens the model reads: ids from here on are rows given in place of embeddings.
    pub n_vocab: u32,
    /// Logits a run gives a row: one a token of the vocabulary, or those of the tokens it lists
    /// first alone (a draft model's head, `LoadOptions::head_rows`). Every choice, draw and row
    /// read back is over these.
    pub n_logits: u32,
    pub n_ctx_train: u32,
    /// The buffers that carry a sequence from run to run besides the KV cache: the recurrent states
    /// of linear-attention layers. A run at position 0 starts them afresh; going back to an earlier
    /// position needs a copy of them from there (`Engine::rewind`).
    pub recurrent: Vec<wgpu::Buffer>,
    /// Applied in turn to each pooled embedding (`Engine::embed`); none for most models.
    pub pooled_projections: Vec<crate::embeddings::Projection>,
    /// Rows of a table left in the file that each run's tokens need (Gemma 4's per-layer
    /// embeddings): read and written before the run.
    pub token_rows: Option<per_layer_embd::TokenRows>,
    /// (batch, width) f32: the rows every plan embeds its tokens into, and their width, where a
    /// run's rows given in place of embeddings (`Engine::hold_image`) are written before it. None where
    /// the model takes no such rows.
    pub embedding_rows: Option<(wgpu::Buffer, u32)>,
    /// It rotates by multimodal RoPE, where an image's tokens turn by their place in its grid
    /// (`Engine::segments`).
    pub multimodal_rope: bool,
}

impl Forward {
    /// The plan of a decode step of one token at `pos`: `decode_long` from its position on.
    pub fn decode_at(&self, pos: u32) -> &Plan {
        deep_or(&self.decode, &self.decode_long, pos)
    }

    /// Every plan: the decode step's first.
    pub fn plans(&self) -> impl Iterator<Item = &Plan> {
        let long = self.decode_long.as_ref().map(|(_, plan)| plan);
        let score = self.score.as_ref().map(|s| &s.plan);
        let hidden = self.hidden.as_ref().map(|h| &h.plan);
        let parallel = self.parallel.iter().flat_map(Parallel::plans);
        let optional = [long, self.prefill.as_ref(), self.prompt_head.as_ref()];
        std::iter::once(&self.decode)
            .chain(optional.into_iter().flatten())
            .chain([score, hidden].into_iter().flatten())
            .chain(parallel)
    }

    /// Every plan, for giving them all new kernel shapes (`Plan::retune`).
    pub fn plans_mut(&mut self) -> impl Iterator<Item = &mut Plan> {
        let long = self.decode_long.as_mut().map(|(_, plan)| plan);
        let score = self.score.as_mut().map(|s| &mut s.plan);
        let hidden = self.hidden.as_mut().map(|h| &mut h.plan);
        let parallel = self.parallel.iter_mut().flat_map(Parallel::plans_mut);
        let optional = [long, self.prefill.as_mut(), self.prompt_head.as_mut()];
        std::iter::once(&mut self.decode)
            .chain(optional.into_iter().flatten())
            .chain([score, hidden].into_iter().flatten())
            .chain(parallel)
    }
}

/// A run that scores its tokens (`Forward::score`).
pub struct Score {
    pub plan: Plan,
    /// (plan.batch) f32: log softmax(logits of token t)[token t + 1].
    pub log_probs: wgpu::Buffer,
}

/// A decode step of several sequences (`Forward::parallel`).
pub struct Parallel {
    /// The plans of steps of up to each one's rows (`step_plan_rows`), fewest first, the last of
    /// `rows()`: a step runs in the first that holds it. A step of up to `PAIR_TOKENS` and one of
    /// up to `STEP_TOKENS_MAX` take their products in kernels tuned for so few tokens
    /// (`MatvecShape::in_step`); a plan of more rows takes its products in tiles
    /// (`Plan::few_tokens`), whose every run costs what its rows would: a server's slots that check
    /// drafts load for seven rows each, but most of their steps hold a few. Every plan here is a
    /// step's (`Plan::new_step`): its attention takes each sequence's tokens apart.
    pub steps: Vec<StepPlans>,
    /// (rows, n_logits) f32: each token's logits.
    pub logits: wgpu::Buffer,
    /// (rows) u32, then (rows) f32: the index of each row's largest logit (a greedy request's
    /// choice), then its chance; the chances after as many words as the plan run has rows.
    pub choices: wgpu::Buffer,
}

/// A parallel step's plan, and its form deep into a context.
pub struct StepPlans {
    pub plan: Plan,
    /// As `plan`, for steps whose last token is at the first number's position or later: each
    /// token's attention split over its keys, as `Forward::decode_long`'s. None where the context
    /// never gets that long, or where the adapter does not split steps of several tokens
    /// (`Gpu::splits_steps`).
    pub long: Option<(u32, Plan)>,
}

impl Parallel {
    /// The most tokens a step runs.
    pub fn rows(&self) -> u32 {
        self.largest().plan.batch
    }

    fn largest(&self) -> &StepPlans {
        self.steps.last().expect("a parallel step has a plan")
    }

    /// The plan of a step of `tokens` whose last token is at `last`: the fewest rows that hold
    /// them, the long form from its position on.
    pub fn plan_for(&self, tokens: u32, last: u32) -> &Plan {
        let holds = |p: &&StepPlans| tokens <= p.plan.batch;
        let plans = self.steps.iter().find(holds).unwrap_or(self.largest());
        deep_or(&plans.plan, &plans.long, last)
    }

    /// The rows of each plan of a step (without their long forms), fewest first: one run of each
    /// runs every kernel a step may.
    pub fn plan_rows(&self) -> impl Iterator<Item = u32> + '_ {
        self.steps.iter().map(|p| p.plan.batch)
    }

    fn plans(&self) -> impl Iterator<Item = &Plan> {
        (self.steps.iter())
            .flat_map(|p| std::iter::once(&p.plan).chain(p.long.as_ref().map(|l| &l.1)))
    }

    fn plans_mut(&mut self) -> impl Iterator<Item = &mut Plan> {
        (self.steps.iter_mut())
            .flat_map(|p| std::iter::once(&mut p.plan).chain(p.long.as_mut().map(|l| &mut l.1)))
    }
}

/// The rows of the plans a parallel step of up to `rows` tokens builds (`Parallel::steps`), fewest
/// first: `PAIR_TOKENS` and `STEP_TOKENS_MAX` where they are fewer, then `rows`.
pub fn step_plan_rows(rows: u32) -> Vec<u32> {
    let fewer = [PAIR_TOKENS, STEP_TOKENS_MAX]
        .into_iter()
        .filter(|&r| r < rows);
    fewer.chain([rows]).collect()
}

/// `long`'s plan where a step's deepest token, at `pos`, is at its position or later (its
/// attention split over the keys), else `plan`.
fn deep_or<'a>(plan: &'a Plan, long: &'a Option<(u32, Plan)>, pos: u32) -> &'a Plan {
    match long {
        Some((from, long)) if pos >= *from => long,
        _ => plan,
    }
}

/// The runs a load builds besides the decode step.
#[derive(Clone, Copy, Debug)]
pub struct PromptRuns {
    /// Prompt tokens per run (1: none, a prompt goes a decode step per token).
    pub batch: u32,
    /// The scoring run (`Forward::score`).
    pub scoring: bool,
    /// The run that leaves each token's final hidden state (`Forward::hidden`).
    pub embeddings: bool,
    /// Rows of the parallel decode plan (`Forward::parallel` where more than one): the sequences a
    /// step may hold, or the tokens a speculative step checks; at most `batch`.
    pub rows: u32,
}

/// `Forward::prefill`, `Forward::score`, `Forward::hidden` and `Forward::parallel`.
pub struct PromptPlans {
    /// The tokens each decode row's choice and candidates may take (a row per sequence).
    pub allowed: Allowed,
    pub prefill: Option<Plan>,
    pub prompt_head: Option<Plan>,
    pub score: Option<Score>,
    pub hidden: Option<Hidden>,
    pub parallel: Option<Parallel>,
}

/// A run that leaves each token's hidden state after the final norm, what embeddings pool
/// (`Forward::hidden`).
pub struct Hidden {
    pub plan: Plan,
    /// (plan.batch, width) f32.
    pub states: wgpu::Buffer,
    pub width: u32,
}

/// The scratch of a step's attention split over the keys, which the decode step's and the parallel
/// step's plans for positions from `Gpu::split_attention_from` on share (their runs go one
/// after the other): `bytes_per_token` (`attention::split_scratch_bytes` of a token, of the layer
/// that needs most) for each of a step's rows (`split_rows`). None where a context of `n_ctx` never
/// reaches them.
pub async fn split_scratch(
    gpu: &Gpu,
    n_ctx: u32,
    bytes_per_token: u64,
    runs: PromptRuns,
) -> Result<Option<wgpu::Buffer>, Error> {
    if n_ctx <= gpu.split_attention_from() {
        return Ok(None);
    }
    let bytes = split_rows(gpu, runs) as u64 * bytes_per_token;
    Ok(Some(scratch_buffer(gpu, "attention splits", bytes).await?))
}

/// The rows of a step whose attention splits deep into a context: the parallel plan's, where the
/// adapter splits steps of several tokens (`Gpu::splits_steps`), else the decode step's one.
fn split_rows(gpu: &Gpu, runs: PromptRuns) -> u32 {
    match runs.rows {
        rows @ 2.. if gpu.splits_steps() => rows,
        _ => 1,
    }
}

/// A step's plan for positions from `Gpu::split_attention_from` on, where the context
/// reaches them (`split_scratch` gave `parts`): `plan` makes it with attention split over the keys
/// through `parts`, and it is finished here.
pub async fn split_step_plan(
    gpu: &Gpu,
    parts: Option<&wgpu::Buffer>,
    plan: impl FnOnce(&wgpu::Buffer) -> Plan,
) -> Result<Option<(u32, Plan)>, Error> {
    let Some(parts) = parts else {
        return Ok(None);
    };
    let mut plan = plan(parts);
    plan.finish(gpu).await?;
    Ok(Some((gpu.split_attention_from(), plan)))
}

/// What every architecture makes the same way from its layers (`push_layers` adds them for a plan's
/// tokens), its final norm (`push_final_norm` leaves each token's normed state in `states`, `width`
/// values a row) and its head (`push_logits` writes each token's logits into the buffer it is given,
/// from the rows of `head_reads`, `width` values a row, that the layers leave): a prompt's chunk and
/// the head of its last token into `logits` when `batch` > 1, and the scoring, hidden-state and
/// parallel decode runs when asked for. `push_layers` splits attention over the keys through the
/// scratch it is given, if any (a step's plan deep into a context: `split_scratch` gave
/// `split_parts`).
pub async fn prompt_plans(
    gpu: &Gpu,
    step: &StepInput,
    (runs, split_parts): (PromptRuns, Option<&wgpu::Buffer>),
    n_logits: u32,
    push_layers: impl Fn(&mut Plan, Option<&wgpu::Buffer>),
    (push_final_norm, states, width): (impl Fn(&mut Plan), &wgpu::Buffer, u32),
    (push_logits, head_reads, logits): (
        impl Fn(&mut Plan, &wgpu::Buffer),
        &wgpu::Buffer,
        &wgpu::Buffer,
    ),
) -> Result<PromptPlans, Error> {
    let batch = runs.batch;
    let allowed = Allowed::new(gpu, runs.rows.max(1), n_logits).await?;
    let (prefill, prompt_head) = match batch {
        1 => (None, None),
        _ => {
            let mut plan = Plan::new(gpu, step, batch);
            push_layers(&mut plan, None);
            plan.finish(gpu).await?;
            // One token's head, as a decode step's, on the chunk's last row moved to row 0.
            let mut head = Plan::new(gpu, step, 1);
            crate::ops::last_row::push(&mut head, head_reads, width);
            push_logits(&mut head, logits);
            head.finish(gpu).await?;
            (Some(plan), Some(head))
        }
    };
    let score = match runs.scoring {
        false => None,
        true => {
            // As many tokens as the prompt batch, or as one binding of their logits holds.
            let rows_fit = gpu.max_binding() / (n_logits as u64 * 4);
            let rows = (batch as u64).min(rows_fit).max(1) as u32;
            let row_logits = rows as u64 * n_logits as u64 * 4;
            let row_logits = scratch_buffer(gpu, "logits of each token", row_logits).await?;
            let log_probs = scratch_buffer(gpu, "log-probabilities", rows as u64 * 4).await?;
            let mut plan = Plan::new(gpu, step, rows);
            push_layers(&mut plan, None);
            push_logits(&mut plan, &row_logits);
            crate::ops::log_prob::push(&mut plan, &row_logits, &log_probs, n_logits);
            plan.finish(gpu).await?;
            Some(Score { plan, log_probs })
        }
    };
    let hidden = match runs.embeddings {
        false => None,
        true => {
            let mut plan = Plan::new(gpu, step, batch);
            push_layers(&mut plan, None);
            push_final_norm(&mut plan);
            plan.finish(gpu).await?;
            let states = states.clone();
            Some(Hidden {
                plan,
                states,
                width,
            })
        }
    };
    let parallel = match runs.rows {
        0 | 1 => None,
        rows => {
            let logits = rows as u64 * n_logits as u64 * 4;
            let logits = scratch_buffer(gpu, "logits of each sequence", logits).await?;
            let bytes = crate::ops::argmax::choice_bytes(rows, n_logits);
            let choices = scratch_buffer(gpu, "choice of each sequence", bytes).await?;
            // Where the adapter splits steps, the scratch holds every row's splits (`split_rows`).
            let parts = split_parts.filter(|_| split_rows(gpu, runs) > 1);
            let mut steps = Vec::new();
            for rows in step_plan_rows(rows) {
                let parallel_plan = |parts: Option<&wgpu::Buffer>| {
                    let mut plan = Plan::new_step(gpu, step, rows);
                    push_layers(&mut plan, parts);
                    push_logits(&mut plan, &logits);
                    crate::ops::argmax::push(&mut plan, &logits, &choices, n_logits, &allowed);
                    plan
                };
                let mut plan = parallel_plan(None);
                plan.finish(gpu).await?;
                let long = split_step_plan(gpu, parts, |parts| parallel_plan(Some(parts))).await?;
                steps.push(StepPlans { plan, long });
            }
            Some(Parallel {
                steps,
                logits,
                choices,
            })
        }
    };
    Ok(PromptPlans {
        allowed,
        prefill,
        prompt_head,
        score,
        hidden,
        parallel,
    })
}

#[cfg(test)]
mod tests {
    use super::step_plan_rows;

    /// A step takes the plan of the fewest rows that holds it: four, eight, or all the load asked
    /// for, so that no step of a few rows runs in a plan of more than a step's eight (a prompt's
    /// chunk).
    #[test]
    fn steps_of_a_few_rows_have_plans_of_their_own() {
        assert_eq!(step_plan_rows(2), [2]);
        assert_eq!(step_plan_rows(4), [4]);
        assert_eq!(step_plan_rows(5), [4, 5]);
        assert_eq!(step_plan_rows(8), [4, 8]);
        assert_eq!(step_plan_rows(14), [4, 8, 14]);
    }
}

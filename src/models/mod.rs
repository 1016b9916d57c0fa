//! Model architectures. Each is its own file: a config from metadata, weights named as GGUF tensors, and
//! the plans of its runs. What they share is here (what a loaded model hands back, its prompt plans,
//! its metadata) and in loader.rs (tensors from the file to the GPU).

pub mod bert;
pub mod deepseek2;
pub mod dense;
pub mod family;
pub mod feed_forward;
mod gemma;
pub mod gemma2;
pub mod gemma3;
pub mod gemma4;
pub mod gemma_embedding;
pub mod gpt_oss;
mod linear_attention;
pub mod llama;
mod loader;
pub mod per_layer_embd;
pub mod phi3;
pub mod qwen2;
pub mod qwen3;
pub mod qwen35;
pub mod qwen35moe;
pub mod qwen3moe;
mod self_attention;

use crate::gguf::{Header, Value};
use crate::gpu::{scratch_buffer, Gpu, GpuTensor, Plan, StepInput, STEP_TOKENS_MAX};
use crate::ops::allowed::Allowed;
use crate::Error;
pub use loader::Loader;

/// The architectures Wick runs.
pub const ARCHITECTURES: &[&str] = &[
    "llama",
    "qwen2",
    "qwen3",
    "qwen35",
    "qwen3moe",
    "qwen35moe",
    "gemma2",
    "gemma3",
    "gemma4",
    "gemma-embedding",
    "bert",
    "nomic-bert",
    "phi3",
    "deepseek2",
    "gpt-oss",
];

/// The families that run on the dense block, each with what sets it apart.
fn dense_family(arch: &str) -> Option<family::FamilyOf> {
    match arch {
        "llama" => Some(llama::family),
        "qwen2" => Some(qwen2::family),
        "qwen3" => Some(qwen3::family),
        "qwen35" => Some(qwen35::family),
        "qwen3moe" => Some(qwen3moe::family),
        "qwen35moe" => Some(qwen35moe::family),
        "phi3" => Some(phi3::family),
        "gemma2" => Some(gemma2::family),
        "gemma3" => Some(gemma3::family),
        "gemma4" => Some(gemma4::family),
        "gemma-embedding" => Some(gemma_embedding::family),
        "bert" | "nomic-bert" => Some(bert::family),
        "gpt-oss" => Some(gpt_oss::family),
        _ => None,
    }
}

/// Architectures whose attention sees the whole input both ways (encoders): an input is one run, so
/// their prompt runs are as long as the context.
const ENCODERS: &[&str] = &["gemma-embedding", "bert", "nomic-bert"];

/// Whether the architecture is a decoder (attention sees only earlier positions).
pub fn causal(arch: &str) -> bool {
    !ENCODERS.contains(&arch)
}

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
    /// (n_vocab) f32, written by the step.
    pub logits: wgpu::Buffer,
    /// The tokens a decode step's choice and candidates may take, a row per sequence.
    pub allowed: Allowed,
    pub n_vocab: u32,
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
        match &self.decode_long {
            Some((from, long)) if pos >= *from => long,
            _ => &self.decode,
        }
    }

    /// Every plan: the decode step's first.
    pub fn plans(&self) -> impl Iterator<Item = &Plan> {
        let long = self.decode_long.as_ref().map(|(_, plan)| plan);
        let score = self.score.as_ref().map(|s| &s.plan);
        let hidden = self.hidden.as_ref().map(|h| &h.plan);
        let parallel = self.parallel.as_ref().map(|p| &p.plan);
        let parallel_long = (self.parallel.as_ref()).and_then(|p| p.long.as_ref().map(|l| &l.1));
        let optional = [long, self.prefill.as_ref(), self.prompt_head.as_ref()];
        std::iter::once(&self.decode)
            .chain(optional.into_iter().flatten())
            .chain(
                [score, hidden, parallel, parallel_long]
                    .into_iter()
                    .flatten(),
            )
    }

    /// Every plan, for giving them all new kernel shapes (`Plan::retune`).
    pub fn plans_mut(&mut self) -> impl Iterator<Item = &mut Plan> {
        let long = self.decode_long.as_mut().map(|(_, plan)| plan);
        let score = self.score.as_mut().map(|s| &mut s.plan);
        let hidden = self.hidden.as_mut().map(|h| &mut h.plan);
        let (parallel, parallel_long) = match self.parallel.as_mut() {
            Some(p) => (Some(&mut p.plan), p.long.as_mut().map(|l| &mut l.1)),
            None => (None, None),
        };
        let optional = [long, self.prefill.as_mut(), self.prompt_head.as_mut()];
        std::iter::once(&mut self.decode)
            .chain(optional.into_iter().flatten())
            .chain(
                [score, hidden, parallel, parallel_long]
                    .into_iter()
                    .flatten(),
            )
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
    pub plan: Plan,
    /// As `plan`, for steps whose last token is at the first number's position or later: each
    /// token's attention split over its keys, as `Forward::decode_long`'s. None where the context
    /// never gets that long, or where the rows are more than a step's (`STEP_TOKENS_MAX`).
    pub long: Option<(u32, Plan)>,
    /// (plan.batch, n_vocab) f32: each token's logits.
    pub logits: wgpu::Buffer,
    /// (plan.batch) u32: the index of each row's largest logit, a greedy request's choice.
    pub choices: wgpu::Buffer,
}

impl Parallel {
    /// The plan of a step whose last token is at `last`: `long` from its position on.
    pub fn plan_at(&self, last: u32) -> &Plan {
        match &self.long {
            Some((from, long)) if last >= *from => long,
            _ => &self.plan,
        }
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
/// step's plans for positions from `attention::SPLIT_ATTENTION_FROM` on share (their runs go one
/// after the other): `bytes_per_token` (`attention::split_scratch_bytes` of a token, of the layer
/// that needs most) for each of a step's rows (`split_rows`). None where a context of `n_ctx` never
/// reaches them.
pub async fn split_scratch(
    gpu: &Gpu,
    n_ctx: u32,
    bytes_per_token: u64,
    runs: PromptRuns,
) -> Result<Option<wgpu::Buffer>, Error> {
    if n_ctx <= crate::ops::attention::SPLIT_ATTENTION_FROM {
        return Ok(None);
    }
    let bytes = split_rows(gpu, runs) as u64 * bytes_per_token;
    Ok(Some(scratch_buffer(gpu, "attention splits", bytes).await?))
}

/// The rows of a step whose attention splits deep into a context: the parallel plan's where it is a
/// step's (`STEP_TOKENS_MAX`) and the adapter splits such steps (`Gpu::splits_steps`), else the
/// decode step's one.
fn split_rows(gpu: &Gpu, runs: PromptRuns) -> u32 {
    match runs.rows {
        rows @ 2..=STEP_TOKENS_MAX if gpu.splits_steps() => rows,
        _ => 1,
    }
}

/// A step's plan for positions from `attention::SPLIT_ATTENTION_FROM` on, where the context
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
    Ok(Some((crate::ops::attention::SPLIT_ATTENTION_FROM, plan)))
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
    n_vocab: u32,
    push_layers: impl Fn(&mut Plan, Option<&wgpu::Buffer>),
    (push_final_norm, states, width): (impl Fn(&mut Plan), &wgpu::Buffer, u32),
    (push_logits, head_reads, logits): (
        impl Fn(&mut Plan, &wgpu::Buffer),
        &wgpu::Buffer,
        &wgpu::Buffer,
    ),
) -> Result<PromptPlans, Error> {
    let batch = runs.batch;
    let allowed = Allowed::new(gpu, runs.rows.max(1), n_vocab).await?;
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
            let rows_fit = gpu.max_binding() / (n_vocab as u64 * 4);
            let rows = (batch as u64).min(rows_fit).max(1) as u32;
            let row_logits = rows as u64 * n_vocab as u64 * 4;
            let row_logits = scratch_buffer(gpu, "logits of each token", row_logits).await?;
            let log_probs = scratch_buffer(gpu, "log-probabilities", rows as u64 * 4).await?;
            let mut plan = Plan::new(gpu, step, rows);
            push_layers(&mut plan, None);
            push_logits(&mut plan, &row_logits);
            crate::ops::log_prob::push(&mut plan, &row_logits, &log_probs, n_vocab);
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
            let logits = rows as u64 * n_vocab as u64 * 4;
            let logits = scratch_buffer(gpu, "logits of each sequence", logits).await?;
            let choices = scratch_buffer(gpu, "choice of each sequence", rows as u64 * 4).await?;
            let parallel_plan = |parts: Option<&wgpu::Buffer>| {
                let mut plan = Plan::new(gpu, step, rows);
                push_layers(&mut plan, parts);
                push_logits(&mut plan, &logits);
                crate::ops::argmax::push(&mut plan, &logits, &choices, n_vocab, &allowed);
                plan
            };
            let mut plan = parallel_plan(None);
            plan.finish(gpu).await?;
            let parts = split_parts.filter(|_| split_rows(gpu, runs) == rows);
            let long = split_step_plan(gpu, parts, |parts| parallel_plan(Some(parts))).await?;
            Some(Parallel {
                plan,
                long,
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

/// A norm's weights: RMSNorm's gain, or LayerNorm's gain and bias (BERT's, which norms the residual
/// stream itself after each residual add).
pub enum Norm {
    Rms(wgpu::Buffer),
    Layer(wgpu::Buffer, wgpu::Buffer),
}

impl Norm {
    /// `name`.weight (and `name`.bias where `layer`), of `n` values.
    pub async fn load(l: &mut Loader<'_>, name: &str, n: u32, layer: bool) -> Result<Norm, Error> {
        let weight = l.vector(&format!("{name}.weight"), n).await?;
        Ok(match layer {
            false => Norm::Rms(weight),
            true => Norm::Layer(weight, l.vector(&format!("{name}.bias"), n).await?),
        })
    }

    /// xn = norm(x) for each token row; a LayerNorm writes the normed rows back into x too.
    pub fn push(&self, plan: &mut Plan, x: &wgpu::Buffer, xn: &wgpu::Buffer, n: u32, eps: f32) {
        match self {
            Norm::Rms(w) => crate::ops::rms_norm::push(plan, x, w, xn, n, eps),
            Norm::Layer(w, b) => crate::ops::layer_norm::push(plan, x, (w, b), xn, n, eps),
        }
    }

    /// xn = norm(x) as the products after it read it: a LayerNorm added now; an RMSNorm left for
    /// them to add, or to do on the way in (`matvec::Input`).
    pub fn input<'a>(
        &'a self,
        plan: &mut Plan,
        (x, xn): (&'a wgpu::Buffer, &'a wgpu::Buffer),
        n: u32,
        eps: f32,
    ) -> crate::ops::matvec::Input<'a> {
        use crate::ops::{matvec::Input, rms_norm::RmsNorm};
        match self {
            Norm::Rms(gain) => Input::RmsNorm(RmsNorm {
                x,
                gain,
                xn,
                n,
                eps,
            }),
            Norm::Layer(..) => {
                self.push(plan, x, xn, n, eps);
                Input::Rows(xn)
            }
        }
    }

    /// The RMS gain, for the kernels that fuse a norm with a residual add (post-norm families,
    /// whose norms are all RMS).
    pub fn rms(&self) -> &wgpu::Buffer {
        match self {
            Norm::Rms(w) => w,
            Norm::Layer(..) => unreachable!("fused norms are RMS norms"),
        }
    }
}

/// What every architecture here has around its layers: the token table, the final norm and the output
/// head (the token table itself when the file has no output.weight).
pub struct Ends {
    pub token_embd: GpuTensor,
    pub output: Option<GpuTensor>,
    pub output_norm: Norm,
}

impl Ends {
    /// The token table, the head, and `output_norm` (output_norm.weight in most files).
    pub async fn load(
        l: &mut Loader<'_>,
        n_embd: u32,
        n_vocab: u32,
        output_norm: (&str, bool),
    ) -> Result<Ends, Error> {
        let (norm_name, layer) = output_norm;
        Ok(Ends {
            token_embd: l.matrix("token_embd.weight", n_embd, n_vocab).await?,
            output: match l.has("output.weight") {
                true => Some(l.matrix("output.weight", n_embd, n_vocab).await?),
                false => None,
            },
            output_norm: Norm::load(l, norm_name, n_embd, layer).await?,
        })
    }

    /// After the last layer: the residual stream `x` (n_embd) normed into `xn`, then the logits.
    pub fn push_logits(
        &self,
        plan: &mut Plan,
        x: &wgpu::Buffer,
        xn: &wgpu::Buffer,
        logits: &wgpu::Buffer,
        eps: f32,
    ) {
        let n_embd = self.token_embd.row_len;
        let xn = self.output_norm.input(plan, (x, xn), n_embd, eps);
        self.push_head(plan, xn, logits);
    }

    /// The logits of `xn` (n_embd): normed by output_norm already, or as `Input` says.
    pub fn push_head<'a>(
        &self,
        plan: &mut Plan,
        xn: impl Into<crate::ops::matvec::Input<'a>>,
        logits: &wgpu::Buffer,
    ) {
        let head = self.output.as_ref().unwrap_or(&self.token_embd);
        crate::ops::matvec::push(plan, head, xn, logits, false);
    }
}

/// Loads the model the header describes, with the prompt runs `runs` asks for.
pub async fn load(loader: &mut Loader<'_>, n_ctx: u32, runs: PromptRuns) -> Result<Forward, Error> {
    let arch = loader.arch.clone();
    match (dense_family(&arch), arch.as_str()) {
        (Some(family), _) => dense::load(loader, family, n_ctx, runs).await,
        (None, "deepseek2") => deepseek2::load(loader, n_ctx, runs).await,
        _ => Err(Error::UnsupportedArchitecture(arch)),
    }
}

/// Positions a load keeps unless told otherwise (`engine::LoadOptions`).
pub const DEFAULT_N_CTX: u32 = 2048;

/// What the engine does with the model the header describes, in a few lines (`wick info`); an
/// architecture it does not run is an error, as at load.
pub fn describe(header: &Header) -> Result<Vec<String>, Error> {
    let meta = Meta::new(header)?;
    match (dense_family(&meta.arch), meta.arch.as_str()) {
        (Some(family), _) => {
            let c = family::Config::from_meta(&meta)?;
            // As a load with the default context would run it.
            let n_ctx = DEFAULT_N_CTX.min(c.n_ctx_train);
            Ok(family(&meta, &c, n_ctx)?.describe(&c))
        }
        (None, "deepseek2") => Ok(vec![
            "Multi-head Latent Attention in absorbed form over one latent cache; mixture-of-experts read by index on the GPU for a token, grouped by expert for a prompt's chunk".into(),
        ]),
        _ => Err(Error::UnsupportedArchitecture(meta.arch)),
    }
}

/// A model's metadata, read under its architecture's prefix: what configs are made from, with or
/// without a GPU (`wick info` reads it from the header alone).
pub struct Meta<'a> {
    pub header: &'a Header,
    pub arch: String,
}

impl<'a> Meta<'a> {
    pub fn new(header: &'a Header) -> Result<Meta<'a>, Error> {
        let arch = header
            .architecture()
            .ok_or_else(|| Error::Model("general.architecture is missing".into()))?;
        Ok(Meta {
            header,
            arch: arch.to_string(),
        })
    }

    fn key(&self, key: &str) -> String {
        format!("{}.{key}", self.arch)
    }

    fn bad(&self, key: &str, problem: &str) -> Error {
        Error::Model(format!("metadata {}: {problem}", self.key(key)))
    }

    pub fn meta_u32(&self, key: &str) -> Result<u32, Error> {
        let v = self
            .header
            .get(&self.key(key))
            .ok_or_else(|| self.bad(key, "missing"))?;
        v.as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| self.bad(key, "not a 32-bit count"))
    }

    /// A count given once for every layer or as one value per layer (llama.cpp's "key or array");
    /// the default where the file has neither.
    pub fn per_layer(
        &self,
        key: &str,
        n_layer: u32,
        default: Option<u32>,
    ) -> Result<Vec<u32>, Error> {
        match self.header.get(&self.key(key)) {
            Some(Value::Array(values)) => {
                let values: Option<Vec<u32>> = (values.iter())
                    .map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok()))
                    .collect();
                match values {
                    Some(v) if v.len() == n_layer as usize => Ok(v),
                    Some(v) => {
                        Err(self.bad(key, &format!("{} values for {n_layer} layers", v.len())))
                    }
                    None => Err(self.bad(key, "not an array of 32-bit counts")),
                }
            }
            Some(_) => Ok(vec![self.meta_u32(key)?; n_layer as usize]),
            None => match default {
                Some(d) => Ok(vec![d; n_layer as usize]),
                None => Err(self.bad(key, "missing")),
            },
        }
    }

    pub fn meta_u32_or(&self, key: &str, default: u32) -> Result<u32, Error> {
        match self.header.get(&self.key(key)) {
            None => Ok(default),
            Some(_) => self.meta_u32(key),
        }
    }

    pub fn meta_f32_or(&self, key: &str, default: f32) -> Result<f32, Error> {
        match self.header.get(&self.key(key)) {
            None => Ok(default),
            Some(v) => v
                .as_f64()
                .map(|v| v as f32)
                .ok_or_else(|| self.bad(key, "not a number")),
        }
    }

    pub fn meta_bool_or(&self, key: &str, default: bool) -> Result<bool, Error> {
        match self.header.get(&self.key(key)) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| self.bad(key, "not a boolean")),
        }
    }

    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.header.get_str(&self.key(key))
    }

    /// Whether the metadata has the key.
    pub fn has_key(&self, key: &str) -> bool {
        self.header.get(&self.key(key)).is_some()
    }

    pub fn has(&self, name: &str) -> bool {
        self.header.tensor(name).is_some()
    }
}

/// The projections an embedding model's file applies after pooling, where it has them: dense_2 from
/// the model's width, then dense_3 from dense_2's (llama.cpp's names for sentence-transformers' Dense
/// modules).
pub async fn pooled_projections(
    l: &mut Loader<'_>,
    n_embd: u32,
) -> Result<Vec<crate::embeddings::Projection>, Error> {
    let mut out = Vec::new();
    let mut width = n_embd;
    for name in ["dense_2.weight", "dense_3.weight"] {
        let Some(t) = l.meta.header.tensor(name) else {
            continue;
        };
        let rows = match t.dims.as_slice() {
            [_, rows] => u32::try_from(*rows).unwrap_or(u32::MAX),
            dims => {
                return Err(Error::Model(format!(
                    "tensor {name} has shape {dims:?}, expected a matrix"
                )))
            }
        };
        let weights = l.host_f32(name, &[width, rows]).await?;
        out.push(crate::embeddings::Projection {
            rows: rows as usize,
            cols: width as usize,
            weights,
        });
        width = rows;
    }
    Ok(out)
}

/// The context length the model was trained for, where its metadata says.
pub fn n_ctx_train(loader: &Loader) -> u32 {
    loader.meta_u32("context_length").unwrap_or(u32::MAX)
}

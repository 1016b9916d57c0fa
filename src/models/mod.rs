//! Model architectures. Each is its own file: a config from metadata, weights named as GGUF tensors, and
//! the plans of its runs. What they share is here (norms, the ends of the model, its metadata), in
//! forward.rs (what a loaded model hands back, the plans every architecture makes alike) and in
//! loader.rs (tensors from the file to the GPU).

pub mod bert;
pub mod deepseek2;
pub mod dense;
pub mod family;
pub mod feed_forward;
mod forward;
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
use crate::gpu::{GpuTensor, Plan};
use crate::Error;
pub use forward::{
    prompt_plans, split_scratch, split_step_plan, Forward, Hidden, Parallel, PromptPlans,
    PromptRuns, Score,
};
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
    /// The output head's rows that give logits (all of them unless the load asks fewer: the tokens
    /// listed first, `Loader::n_logits`).
    pub head: GpuTensor,
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
        let token_embd = l.matrix("token_embd.weight", n_embd, n_vocab).await?;
        let output = match l.has("output.weight") {
            true => Some(l.matrix("output.weight", n_embd, n_vocab).await?),
            false => None,
        };
        let head = output.as_ref().unwrap_or(&token_embd);
        Ok(Ends {
            head: head.first_rows(l.n_logits(n_vocab)),
            token_embd,
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
        crate::ops::matvec::push(plan, &self.head, xn, logits, false);
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

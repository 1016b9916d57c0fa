//! Wick: quantized GGUF language models on the GPU through WebGPU (wgpu).
//!
//! The flow of a model: a [`gguf::ByteSource`] gives the header and then each tensor's bytes, which go
//! still packed into GPU buffers; the architecture in [`models`] builds its plans once (a decode step,
//! and a chunk of a prompt where it batches); [`engine::Engine`] runs them, one compute pass and one
//! submit per token decoded or per chunk of prompt.

pub mod chat_template;
pub mod embeddings;
pub mod engine;
pub mod gguf;
pub mod gpu;
pub mod grammar;
pub mod models;
pub mod openai;
pub mod ops;
pub mod perplexity;
pub mod quant;
#[cfg(not(target_arch = "wasm32"))]
pub mod quantize;
pub mod reasoning;
pub mod reply;
pub mod sampler;
pub mod session;
pub mod slots;
pub mod speculate;
pub mod stop;
pub mod tokenizer;
pub mod tools;
pub mod vision;

/// Everything that can go wrong in the engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Gguf(#[from] gguf::GgufError),
    #[error(transparent)]
    Source(#[from] gguf::SourceError),
    #[error(transparent)]
    Gpu(#[from] gpu::GpuError),
    #[error(transparent)]
    Tokenizer(#[from] tokenizer::TokenizerError),
    #[error(transparent)]
    Template(#[from] chat_template::TemplateError),
    #[error("architecture {0:?} is not supported (Wick runs: {archs})", archs = models::ARCHITECTURES.join(", "))]
    UnsupportedArchitecture(String),
    #[error("{0}")]
    Model(String),
    // `why` is part of the message, not a source: a source would print it twice after it.
    #[error("the model does not fit {adapter}: its weights alone are {:.1} MB, and {why}", *weight_bytes as f64 / 1e6)]
    DoesNotFit {
        adapter: String,
        weight_bytes: u64,
        why: gpu::GpuError,
    },
    #[error("the context is full ({0} tokens)")]
    ContextFull(u32),
    #[error(transparent)]
    Grammar(#[from] grammar::GrammarError),
    #[error("token id {token} is outside the vocabulary of {n_vocab}")]
    BadToken { token: u32, n_vocab: u32 },
}

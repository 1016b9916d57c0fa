//! How a model is loaded (`Engine::load`): its context, its prompt chunks, the plans it builds
//! besides decoding, and the chunk size an adapter takes unless told.

use crate::embeddings::Pooling;
use crate::gguf::Header;
use crate::gpu::{Gpu, KvType};
use crate::models;

#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Context length (positions in the KV cache); capped at the model's training context.
    pub n_ctx: u32,
    /// Prompt tokens per run where the architecture batches them (1: one at a time, like decoding);
    /// None: the adapter's for the model (`default_batch`).
    pub batch: Option<u32>,
    /// Prompt runs of at least this many tokens, whatever the default (an image's tokens, which go
    /// in one run).
    pub min_batch: u32,
    /// Also build the plan that scores every token of a chunk (`Engine::log_probs`, perplexity): it
    /// keeps a row of logits per token of the chunk (batch x n_vocab floats) on the GPU.
    pub scoring: bool,
    /// Put tables that could stay in the file on the GPU too (Gemma 4's per-layer embeddings, read
    /// by rows for each token otherwise).
    pub per_layer_on_gpu: bool,
    /// Embed inputs pooled this way (`Engine::embed`), whatever the file says. None: as the file
    /// says, where it names a pooling (an embedding model); a file that names none (a chat model) is
    /// then loaded without the embeddings run.
    pub pooling: Option<Pooling>,
    /// Sequences one decode step may hold (`Engine::step_sequences`: parallel requests, each at its
    /// own rows of the cache). More than one needs a model whose memory is a KV cache alone.
    pub sequences: u32,
    /// Tokens one speculative step may check at once (`Engine::check`: the token picked last and
    /// the draft after it), each a row of the parallel plan; 0 or 1: no speculative steps.
    pub check_tokens: u32,
    /// How the KV cache holds keys and values: f32 (exact), or f16 (half the memory and the bytes
    /// attention reads, llama.cpp's default); None: the adapter's (`default_kv_cache`).
    /// Multi-head Latent Attention's cache stays f32.
    pub kv_cache: Option<KvType>,
    /// Logits of the tokens the vocabulary lists first alone, this many (None: of every token). A
    /// BPE vocabulary lists its merges in the order they were learned, the commonest first, and a
    /// SentencePiece one by score: a draft model's head over the first tens of thousands reads a
    /// fraction of its rows and still proposes most of what a reply says (`DraftModel::load`).
    /// Tokens past them are read as ever; no choice, draw or row of logits reaches them.
    pub head_rows: Option<u32>,
}

/// How the KV cache holds keys and values unless told, by the adapter. On a GPU f16, as llama.cpp
/// keeps it: a long chat's cache is what its decode steps read besides the weights (Llama 3.1 8B's
/// at 16,384 positions: 4 GiB in f32 against 4.9 GB of Q4_K_M weights), and what fills a card's
/// memory first. Where the adapter runs workgroups on the CPU, f32, exact: there f16 bought a
/// decode step nothing measured (BENCHMARKS.md), and the cache is the machine's memory.
pub fn default_kv_cache(gpu: &Gpu) -> KvType {
    match gpu.runs_on_cpu() {
        true => KvType::F32,
        false => KvType::F16,
    }
}

/// Prompt tokens per run unless told otherwise, by the adapter and the model. On a GPU 512, llama.cpp's
/// default micro-batch: a product's tiles of 64 tokens (`gpu::matmul_tile`) then make 8 columns of
/// workgroups, 256 for a 4,096-row matrix, where a chunk of 64 makes 32, a fraction of a large GPU's
/// cores. Where the adapter runs workgroups on the CPU, 64 for a dense model: enough for the tiles to
/// fill up, and faster there than 256 (BENCHMARKS.md). A mixture of experts there takes as many as
/// give each expert a list of 16 items on average (the smallest tile's tokens), up to 512: an
/// expert's weights are dequantized once a chunk for its list, and with 128 experts, 8 a token
/// (Qwen3-30B-A3B), a chunk of 64 gives each 4.
pub fn default_batch(gpu: &Gpu, header: &Header) -> u32 {
    if !gpu.runs_on_cpu() {
        return 512;
    }
    let arch = header.architecture().unwrap_or_default();
    let count = |key: &str| header.get_u64(&format!("{arch}.{key}")).unwrap_or(0);
    match (count("expert_count"), count("expert_used_count")) {
        (n_expert, n_used) if n_expert > 0 && n_used > 0 => {
            let tokens = (16 * n_expert).div_ceil(n_used).next_power_of_two();
            tokens.clamp(64, 512) as u32
        }
        _ => 64,
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            n_ctx: models::DEFAULT_N_CTX,
            batch: None,
            min_batch: 0,
            scoring: false,
            per_layer_on_gpu: false,
            pooling: None,
            sequences: 1,
            check_tokens: 0,
            kv_cache: None,
            head_rows: None,
        }
    }
}

//! Perplexity by llama-perplexity's method, so the two can be compared on the same file and text.
//!
//! The text (less one final newline, as llama-perplexity reads a file) is tokenized with BOS where the
//! model adds one and cut into chunks of `n_ctx` tokens; each chunk runs from an empty cache with its
//! first token replaced by BOS (where the model adds one), and only its second half is scored, so every
//! scored token sees at least `n_ctx / 2` tokens of context. The first half goes in as a prompt does;
//! the second through `Engine::log_probs`, batched on the GPU where the engine was loaded for scoring.

use crate::engine::Engine;
use crate::tokenizer::Tokenizer;
use crate::Error;

/// What a perplexity run measured.
#[derive(Clone, Debug)]
pub struct Perplexity {
    /// The running perplexity after each chunk, as llama-perplexity prints it; the last is the result.
    pub per_chunk: Vec<f64>,
    /// Tokens in the whole text, and those scored.
    pub text_tokens: usize,
    pub scored_tokens: usize,
}

impl Perplexity {
    pub fn value(&self) -> f64 {
        *self.per_chunk.last().expect("at least one chunk is scored")
    }
}

/// Scores at most `max_chunks` chunks (all the text holds when None); `on_chunk` hears the number of
/// chunks to score first, then the running value after each.
pub async fn perplexity(
    engine: &mut Engine,
    tokenizer: &Tokenizer,
    text: &str,
    max_chunks: Option<usize>,
    on_chunk: &mut dyn FnMut(usize, f64),
) -> Result<Perplexity, Error> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let bos = tokenizer.bos().filter(|_| tokenizer.add_bos());
    let mut tokens: Vec<u32> = bos.into_iter().collect();
    tokens.extend(tokenizer.encode(text, false));
    let n_ctx = engine.n_ctx() as usize;
    // llama-perplexity wants two chunks' worth at least.
    if n_ctx < 2 || tokens.len() < 2 * n_ctx {
        return Err(Error::Model(format!(
            "the text is {} tokens; scoring needs at least twice the context of {n_ctx} (lower -c)",
            tokens.len()
        )));
    }
    let chunks = (tokens.len() / n_ctx).min(max_chunks.unwrap_or(usize::MAX));
    let first = n_ctx / 2;
    let (mut nll, mut count) = (0f64, 0usize);
    let mut per_chunk = Vec::with_capacity(chunks);
    for c in 0..chunks {
        let mut chunk = tokens[c * n_ctx..(c + 1) * n_ctx].to_vec();
        if let Some(bos) = bos {
            chunk[0] = bos;
        }
        engine.rewind(0);
        engine.feed(&chunk[..first]).await?;
        let scored = engine
            .log_probs(&chunk[first..n_ctx - 1], chunk[n_ctx - 1])
            .await?;
        nll -= scored.iter().sum::<f64>();
        count += scored.len();
        let ppl = (nll / count as f64).exp();
        per_chunk.push(ppl);
        on_chunk(c, ppl);
    }
    Ok(Perplexity {
        per_chunk,
        text_tokens: tokens.len(),
        scored_tokens: count,
    })
}

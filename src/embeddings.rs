//! Embeddings: one vector for a whole text, pooled from the hidden states the model leaves after its
//! final norm (`Engine::embed` runs them), as llama.cpp's `--pooling` makes them.

use crate::gguf::Header;
use crate::Error;

/// How a text's token states become one vector (`{arch}.pooling_type` in GGUF).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    /// The mean over every token (sentence-transformers' default, EmbeddingGemma, most BERTs).
    Mean,
    /// The first token's state ([CLS] in BERT).
    Cls,
    /// The last token's state (Qwen3-Embedding, whose inputs end with EOS for it).
    Last,
}

impl Pooling {
    /// The pooling the file names. None where it names none (a chat model; GGUF's "none" pools
    /// nothing), and an error for a kind Wick does not pool: rank (rerankers' scores).
    pub fn of_model(header: &Header) -> Result<Option<Pooling>, Error> {
        let arch = header.architecture().unwrap_or_default();
        let key = format!("{arch}.pooling_type");
        match header.get(&key).map(|v| v.as_u64()) {
            None | Some(Some(0)) => Ok(None),
            Some(Some(1)) => Ok(Some(Pooling::Mean)),
            Some(Some(2)) => Ok(Some(Pooling::Cls)),
            Some(Some(3)) => Ok(Some(Pooling::Last)),
            Some(Some(4)) => Err(Error::Model(
                "rank pooling (a reranker's score) is not supported".into(),
            )),
            Some(other) => Err(Error::Model(format!(
                "metadata {key}: {other:?} is not a pooling type"
            ))),
        }
    }

    /// By name, as llama.cpp's `--pooling` spells it.
    pub fn from_name(name: &str) -> Option<Pooling> {
        match name {
            "mean" => Some(Pooling::Mean),
            "cls" => Some(Pooling::Cls),
            "last" => Some(Pooling::Last),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
            Pooling::Last => "last",
        }
    }

    /// The rows of a chunk of `len` tokens starting at token `start` of an input of `n` tokens that
    /// this pooling reads: every one for the mean, else the one it keeps (an empty range where the
    /// chunk has none of them, and then nothing is read back).
    pub fn rows_needed(self, start: usize, len: usize, n: usize) -> std::ops::Range<usize> {
        let end = start + len;
        let keep = |t: usize| match (start..end).contains(&t) {
            true => t - start..t - start + 1,
            false => 0..0,
        };
        match self {
            Pooling::Mean => 0..len,
            Pooling::Cls => keep(0),
            Pooling::Last => keep(n - 1),
        }
    }
}

/// Sums the rows a pooling reads, chunk by chunk, into its one vector.
pub struct Pooler {
    pooling: Pooling,
    sum: Vec<f64>,
    rows: usize,
}

impl Pooler {
    pub fn new(pooling: Pooling, width: usize) -> Pooler {
        Pooler {
            pooling,
            sum: vec![0.0; width],
            rows: 0,
        }
    }

    /// Takes the rows `rows_needed` named (row after row, `width` values each).
    pub fn add(&mut self, states: &[f32]) {
        for row in states.chunks_exact(self.sum.len()) {
            for (s, &v) in self.sum.iter_mut().zip(row) {
                *s += v as f64;
            }
            self.rows += 1;
        }
    }

    pub fn finish(self) -> Vec<f32> {
        let n = match self.pooling {
            Pooling::Mean => self.rows.max(1) as f64,
            Pooling::Cls | Pooling::Last => 1.0,
        };
        self.sum.iter().map(|&s| (s / n) as f32).collect()
    }
}

/// `v` scaled to unit length (Euclidean), as OpenAI's embeddings and llama.cpp's default
/// (`--embd-normalize 2`) are; a zero vector stays zero.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x = (*x as f64 / norm) as f32;
        }
    }
}

/// The cosine of the angle between `a` and `b`.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum();
    let norm = |v: &[f32]| v.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b)).max(f64::MIN_POSITIVE)
}

/// A matrix applied to the pooled vector (sentence-transformers' Dense modules after the pooling:
/// EmbeddingGemma's dense_2 and dense_3). A few million weights, once per input: on the host.
pub struct Projection {
    pub rows: usize,
    pub cols: usize,
    /// (rows, cols), row-major.
    pub weights: Vec<f32>,
}

impl Projection {
    pub fn apply(&self, v: &[f32]) -> Vec<f32> {
        assert_eq!(
            v.len(),
            self.cols,
            "a vector as wide as the projection's rows"
        );
        self.weights
            .chunks_exact(self.cols)
            .map(|row| {
                row.iter()
                    .zip(v)
                    .map(|(&w, &x)| w as f64 * x as f64)
                    .sum::<f64>() as f32
            })
            .collect()
    }
}

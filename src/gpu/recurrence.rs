//! How Gated DeltaNet's recurrence walks a prompt's run: token by token, or in chunks of tokens in the
//! chunked (WY) form. Which is faster depends on the adapter (on lavapipe the token form, by 5-10%), so
//! the form is a tuned choice, per shape, beside the matvecs' kernel shapes.

use serde::{Deserialize, Serialize};

/// How the recurrence walks a run's tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recurrence {
    /// One token after another (shaders/delta_net.wgsl): the only form of a decode step.
    Tokens,
    /// In chunks of this many tokens, each chunk's updates as small matrix products
    /// (shaders/delta_net_chunks.wgsl).
    Chunks(u32),
}

impl std::fmt::Display for Recurrence {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Recurrence::Tokens => write!(f, "token by token"),
            Recurrence::Chunks(chunk) => write!(f, "chunks of {chunk}"),
        }
    }
}

/// Chunk sizes the chunked form is built for, largest first.
pub const CHUNK_SIZES: [u32; 3] = [16, 8, 4];

/// Workgroup memory the chunked form takes for chunks of `chunk` tokens of heads of `dim`: q's and
/// k's tiles, the two chunk x chunk products, and six values a token.
pub fn chunk_bytes(dim: u32, chunk: u32) -> u32 {
    4 * (2 * chunk * dim + 2 * chunk * chunk + 6 * chunk)
}

/// Whether heads of `dim` take chunks of `chunk` on an adapter with `workgroup_bytes`: the tiles fit,
/// and a head has the threads the chunk needs (four a token).
pub fn chunk_fits(dim: u32, chunk: u32, workgroup_bytes: u32) -> bool {
    dim >= 4 * chunk && chunk_bytes(dim, chunk) <= workgroup_bytes
}

/// A prompt plan's recurrence, for finding its tuned form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecurrenceShape {
    /// Value heads, a workgroup each.
    pub heads: u32,
    /// Dimensions of a head, a thread each.
    pub dim: u32,
    /// Tokens of the plan's runs (a prompt's chunk).
    pub tokens: u32,
}

impl RecurrenceShape {
    pub fn key(&self) -> String {
        format!("deltanet {}x{} x{}", self.heads, self.dim, self.tokens)
    }

    /// The form unless tuned: the largest chunk that fits, the token form where none does.
    pub fn default_form(&self, workgroup_bytes: u32) -> Recurrence {
        self.candidates(workgroup_bytes)[0]
    }

    /// The forms `Engine::tune` times: every chunk that fits, then the token form.
    pub fn candidates(&self, workgroup_bytes: u32) -> Vec<Recurrence> {
        let chunks = CHUNK_SIZES
            .into_iter()
            .filter(|&c| chunk_fits(self.dim, c, workgroup_bytes));
        chunks
            .map(Recurrence::Chunks)
            .chain([Recurrence::Tokens])
            .collect()
    }

    /// Whether the adapter can run the shape in `form`.
    pub fn fits(&self, form: Recurrence, workgroup_bytes: u32) -> bool {
        match form {
            Recurrence::Tokens => true,
            Recurrence::Chunks(chunk) => chunk_fits(self.dim, chunk, workgroup_bytes),
        }
    }
}

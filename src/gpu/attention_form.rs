//! How a prompt's chunk attends over the cache in tiles of keys (flash attention): a query a thread
//! (shaders/attention_tiled.wgsl), fast where workgroups run on a CPU and the only form without
//! subgroups; or blocks of queries whose heads are split over eight threads of a subgroup
//! (shaders/attention_rows.wgsl), whose rows fit a GPU thread's registers. Which is faster depends
//! on the adapter, so the form is a tuned choice, per shape, beside the matvecs' kernel shapes.

use super::kernels::KvType;
use super::tiles::attention_tile_bytes;
use serde::{Deserialize, Serialize};

/// How the chunk's queries walk the keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionForm {
    /// A query a thread, 64 a workgroup (shaders/attention_tiled.wgsl).
    Query,
    /// `queries` a workgroup of 128 threads, each query's head split over 8 of them, over tiles of
    /// `keys` keys (shaders/attention_rows.wgsl).
    Rows { queries: u32, keys: u32 },
}

impl std::fmt::Display for AttentionForm {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            AttentionForm::Query => write!(f, "a query a thread"),
            AttentionForm::Rows { queries, keys } => {
                write!(f, "{queries} queries by {keys} keys, heads split")
            }
        }
    }
}

/// Queries (and threads) of a query-a-thread workgroup.
pub const QUERY_WORKGROUP: u32 = 64;

/// Threads a query's head is split over in the rows form: neighbouring lanes of a subgroup, so the
/// adapter's subgroups must be at least this wide.
pub const ROWS_HEAD_SPLIT: u32 = 8;

/// Threads of a rows-form workgroup.
pub const ROWS_WORKGROUP: u32 = 128;

/// The rows form's (queries, keys) a workgroup, the fewest registers last.
const ROWS_SIZES: [(u32, u32); 3] = [(16, 32), (8, 32), (8, 16)];

/// Workgroup memory of the rows form for heads of `head_dim` over tiles of `keys`: the tile, and
/// each thread's max and sum for the merge, and the queries' range.
pub const fn rows_bytes(head_dim: u32, keys: u32) -> u32 {
    keys * head_dim * 4 + 2 * ROWS_WORKGROUP * 4 + 16
}

/// A prompt plan's attention, for finding its tuned form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttentionShape {
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    /// Tokens of the plan's runs (a prompt's chunk).
    pub tokens: u32,
    pub cache: KvType,
}

impl AttentionShape {
    pub fn key(&self) -> String {
        let AttentionShape {
            heads,
            kv_heads,
            head_dim,
            tokens,
            cache,
        } = self;
        let cache = cache.name();
        format!("attention {heads}x{head_dim} kv{kv_heads} x{tokens} {cache}")
    }

    /// The form unless tuned: a query a thread, which every adapter runs.
    pub fn default_form(&self) -> AttentionForm {
        AttentionForm::Query
    }

    /// The forms `Engine::tune` times where the adapter's subgroups are `subgroup_size` wide (None:
    /// none that work) and its workgroups hold `workgroup_bytes`.
    pub fn candidates(
        &self,
        subgroup_size: Option<u32>,
        workgroup_bytes: u32,
    ) -> Vec<AttentionForm> {
        let split = subgroup_size.is_some_and(|s| s >= ROWS_HEAD_SPLIT);
        let rows = ROWS_SIZES
            .into_iter()
            .map(|(queries, keys)| AttentionForm::Rows { queries, keys })
            .filter(|&form| split && self.fits(form, workgroup_bytes));
        [AttentionForm::Query].into_iter().chain(rows).collect()
    }

    /// Whether an adapter whose workgroups hold `workgroup_bytes` can run the shape in `form` (the
    /// rows form also needs subgroups, which `Gpu::set_tuning` checks).
    pub fn fits(&self, form: AttentionForm, workgroup_bytes: u32) -> bool {
        let d = self.head_dim;
        match form {
            AttentionForm::Query => attention_tile_bytes(d) <= workgroup_bytes,
            // A thread holds a whole number of vec4s of a head; the merge at the end passes the
            // workgroup's output slices through the tile, which needs 16 keys.
            AttentionForm::Rows { keys, .. } => {
                d.is_multiple_of(4 * ROWS_HEAD_SPLIT)
                    && d <= 256
                    && keys >= 16
                    && rows_bytes(d, keys) <= workgroup_bytes
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows form is offered only with subgroups of 8 lanes or more, for heads it splits evenly,
    /// at the sizes the adapter's workgroup memory holds (WebGPU's 16 KiB: not 32 keys of 128
    /// dimensions, whose tile alone is 16 KiB).
    #[test]
    fn rows_are_offered_where_they_run() {
        let shape = |head_dim| AttentionShape {
            heads: 8,
            kv_heads: 2,
            head_dim,
            tokens: 512,
            cache: KvType::F16,
        };
        let rows = |s: AttentionShape, subgroups, bytes| {
            let forms = s.candidates(subgroups, bytes);
            assert_eq!(forms[0], AttentionForm::Query);
            forms.len() - 1
        };
        assert_eq!(rows(shape(128), Some(32), 49152), 3);
        assert_eq!(rows(shape(128), None, 49152), 0);
        assert_eq!(rows(shape(128), Some(4), 49152), 0);
        assert_eq!(rows(shape(128), Some(32), 16384), 1, "16 keys only");
        assert_eq!(
            rows(shape(72), Some(32), 49152),
            0,
            "72 / 4 is not a multiple of 8"
        );
        assert_eq!(rows(shape(64), Some(8), 16384), 3);
        assert!(
            rows_bytes(256, 16) > 16384,
            "heads of 256 need more than WebGPU's 16 KiB"
        );
    }
}

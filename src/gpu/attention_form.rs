//! How a prompt's chunk attends over the cache in tiles of keys (flash attention): a query a thread
//! (shaders/attention_tiled.wgsl), fast where workgroups run on a CPU and the only form without
//! subgroups; or blocks of queries whose heads are split over eight threads of a subgroup
//! (shaders/attention_rows.wgsl), whose rows fit a GPU thread's registers. And how a decode step deep
//! into a context attends with its keys split over workgroups (flash-decoding): a key a thread
//! (shaders/attention_split.wgsl), or a head's dims split over neighbouring lanes of a subgroup
//! (shaders/attention_split_lanes.wgsl), whose reads of a key are side by side. On an adapter's matrix
//! cores, a chunk's scores and its weights times the values are products of f16 matrices into f32
//! (shaders/attention_coop.wgsl), where plans may round so (`Rounding::MatrixCores`). Which is faster
//! depends on the adapter, so the form is a tuned choice, per shape, beside the matvecs' kernel
//! shapes. Multi-head Latent Attention's shapes take forms of their own (latent.rs).

use super::kernels::KvType;
use super::matvec_kernel::Offers;
use super::matvec_shape::Adapter;
use super::rounding::Rounding;
use super::tiles::attention_tile_bytes;
use super::MatrixCores;
use serde::{Deserialize, Serialize};

mod latent;
pub use latent::{largest_query_tile, latent_matrix_bytes, MAX_LATENT};

/// How the chunk's queries walk the keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionForm {
    /// A query a thread, 64 a workgroup (shaders/attention_tiled.wgsl).
    Query,
    /// `queries` a workgroup of 128 threads, each query's head split over 8 of them, over tiles of
    /// `keys` keys (shaders/attention_rows.wgsl).
    Rows { queries: u32, keys: u32 },
    /// One token's keys split over workgroups, each a group of up to 4 heads, a key a thread
    /// (shaders/attention_split.wgsl).
    SplitKeys,
    /// One token's keys split over workgroups, each a kv head's query heads (up to 4), a head's dims
    /// split over `lanes` (4 to 32) neighbouring lanes of a subgroup, `columns` keys at once, each
    /// column reading `keys` keys (CI apart) before it scores them (shaders/attention_split_lanes.wgsl).
    SplitLanes {
        lanes: u32,
        columns: u32,
        /// Tunings kept before a column read several keys at once name none: one.
        #[serde(default = "one_key")]
        keys: u32,
    },
    /// `MATRIX_SUBGROUPS` blocks of `size` queries a workgroup, a subgroup of `lanes` each, over
    /// tiles of `keys` keys, on the adapter's matrix cores in products of `size` x `size`
    /// (shaders/attention_coop.wgsl): queries, keys, values and weights in f16, scores and sums f32.
    Matrix { size: u32, lanes: u32, keys: u32 },
    /// Multi-head Latent Attention's chunk (`AttentionShape::latent`): a group of up to 4 heads of
    /// `tokens` consecutive tokens a workgroup, each cache row read once for them as it streams by
    /// (shaders/mla_attention.wgsl).
    Latent { tokens: u32 },
    /// The same on the adapter's matrix cores in products of `size` x `size`: `size` rows of
    /// (token, head) a workgroup over tiles of `keys` cache rows, its `MATRIX_SUBGROUPS` subgroups of
    /// `lanes` sharing out each product's matrices (shaders/mla_attention_coop.wgsl); queries, keys,
    /// values and weights in f16, scores and sums f32.
    LatentMatrix { size: u32, lanes: u32, keys: u32 },
}

impl AttentionForm {
    /// The subgroup lanes it needs, where it shuffles between them.
    pub fn lanes(&self) -> Option<u32> {
        match *self {
            AttentionForm::Query | AttentionForm::SplitKeys | AttentionForm::Latent { .. } => None,
            AttentionForm::Rows { .. } => Some(ROWS_HEAD_SPLIT),
            AttentionForm::SplitLanes { lanes, .. } => Some(lanes),
            AttentionForm::Matrix { .. } | AttentionForm::LatentMatrix { .. } => None,
        }
    }

    /// What it rounds beyond f32, where it does.
    pub fn rounding(&self) -> Option<Rounding> {
        let on_cores = matches!(
            self,
            AttentionForm::Matrix { .. } | AttentionForm::LatentMatrix { .. }
        );
        on_cores.then_some(Rounding::MatrixCores)
    }
}

impl std::fmt::Display for AttentionForm {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            AttentionForm::Query => write!(f, "a query a thread"),
            AttentionForm::Rows { queries, keys } => {
                write!(f, "{queries} queries by {keys} keys, heads split")
            }
            AttentionForm::SplitKeys => write!(f, "split, a key a thread"),
            AttentionForm::SplitLanes {
                lanes,
                columns,
                keys: 1,
            } => write!(f, "split, heads over {lanes} lanes by {columns} keys"),
            AttentionForm::SplitLanes {
                lanes,
                columns,
                keys,
            } => write!(
                f,
                "split, heads over {lanes} lanes by {columns} columns of {keys} keys"
            ),
            AttentionForm::Matrix { size, keys, .. } => {
                let queries = MATRIX_SUBGROUPS * size;
                write!(f, "{queries} queries by {keys} keys on matrix cores")
            }
            AttentionForm::Latent { tokens } => write!(f, "latent, {tokens} tokens a workgroup"),
            AttentionForm::LatentMatrix { size, keys, .. } => {
                write!(f, "latent, {size} rows by {keys} keys on matrix cores")
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

/// Subgroups of a matrix form's workgroup, each taking `size` queries.
pub const MATRIX_SUBGROUPS: u32 = 4;

/// The matrix form's keys a tile, in products of `size`: more keys, fewer barriers for each product,
/// against more workgroup memory.
const MATRIX_KEYS: [u32; 2] = [2, 4];

/// Workgroup memory of the matrix form for heads of `head_dim` in products of `size` over tiles of
/// `keys` (shaders/attention_coop.wgsl): the tile of f16 keys or values (at the start, the queries),
/// the f32 scores, the f16 weights (each row padded), a factor a query, and the workgroup's range
/// and flag.
pub const fn matrix_bytes(head_dim: u32, size: u32, keys: u32) -> u32 {
    let queries = MATRIX_SUBGROUPS * size;
    let rows = if keys > queries { keys } else { queries };
    rows * (head_dim + 8) * 2
        + queries * (keys + 4) * 4
        + queries * (keys + 8) * 2
        + queries * 4
        + 32
}

/// The split lanes form's (lanes, columns), 128 threads each: fewer vec4s of a head a lane holds
/// (registers) against more keys at once. 4 lanes are what SwiftShader's subgroups have (Chrome's
/// CPU adapter).
const SPLIT_LANES: [(u32, u32); 4] = [(4, 32), (8, 16), (16, 8), (32, 4)];

/// Keys a column of the split lanes form reads before it scores them: with two, each thread has
/// twice the bytes in flight. A GPU's decode deep into a context waits on those reads (on an H200,
/// 8B at 4,096 positions, 128 threads a workgroup and two workgroups a core read the cache at a
/// tenth of the card's bandwidth); where registers allow, both are offered.
const SPLIT_LANES_KEYS: [u32; 2] = [1, 2];

/// Vec4s of a head a lane of the split lanes form holds at most: its query's and output's slices of
/// each of 4 heads (128 floats), and a key's and a value's slices, stay in a GPU thread's registers.
/// A column reading two keys at once holds two of each, so it takes half the vec4s of a head.
const SPLIT_LANES_MAX_VEC4S: u32 = 4;

/// Rows (a head of a token) whose query and output slices a lane of the split lanes form holds at
/// most, in vec4s: as many as 4 heads of one token at `SPLIT_LANES_MAX_VEC4S`.
const SPLIT_LANES_MAX_ROW_VEC4S: u32 = 16;

/// Consecutive tokens of one sequence a split workgroup takes at most.
const SPLIT_TOKENS: u32 = 4;

/// What a tuning kept before the split lanes form's `keys` was chosen meant: a key at a time.
fn one_key() -> u32 {
    1
}

/// Workgroup memory of the split lanes form for heads of `head_dim` over `threads`, `columns` of
/// keys: each thread's max, sum and output slice for the merge of the columns.
pub const fn split_lanes_bytes(head_dim: u32, threads: u32, columns: u32) -> u32 {
    2 * threads * 4 + columns * head_dim * 4
}

/// Query heads that read one kv head a split workgroup takes at most (GROUP in
/// shaders/head_group.wgsl): each key and value read serves them.
pub const HEAD_GROUP: u32 = 4;

/// Workgroups for `n_head` query heads over `n_kv_head` kv heads: the heads of a kv head go in
/// groups of up to `HEAD_GROUP`.
pub fn head_groups(n_head: u32, n_kv_head: u32) -> u32 {
    n_kv_head * (n_head / n_kv_head).div_ceil(HEAD_GROUP)
}

/// Threads of a workgroup of shaders/attend.wgsl for heads of `head_dim` dimensions: 4 of a value's
/// dimensions each.
pub fn attention_workgroup(head_dim: u32) -> u32 {
    (head_dim / 4).max(64).next_power_of_two()
}

/// The position from which a step splits attention over the keys (`ops::attention::splits`) unless
/// the adapter is told otherwise (`Gpu::split_attention_from`). Where workgroups run on the CPU,
/// 1,024: before it the extra merge dispatch costs more than the few idle cores (BENCHMARKS.md). On
/// a GPU, 32: the whole-head form walks a head's keys in one workgroup, and on an H200 it took 22 µs
/// a layer at the first keys and 0.6 µs more for each key (an 8B decode at 512 positions ran at 61
/// tokens/s unsplit, 146 split), where the split and its merge take about as long at a few keys as
/// it does at none.
pub fn split_attention_from(runs_on_cpu: bool) -> u32 {
    match runs_on_cpu {
        true => 1024,
        false => 32,
    }
}

/// Workgroups a decode step's split attention aims at on a GPU, a layer, unless the adapter is told
/// otherwise (`Gpu::set_split_workgroups`): a few for each of a large GPU's cores (an H200 has 132),
/// whatever the model's heads (`ops::attention::splits`).
pub const SPLIT_WORKGROUPS: u32 = 256;

/// The position the tuner times a split shape at: a long chat's, where splitting pays.
pub const SPLIT_TIMED_AT: u32 = 4096;

/// The position the tuner times a prompt chunk's attention at. On a GPU, 2,048: a chunk's attention
/// is a few percent of a short prompt's time (16 of 223 ms for 512 tokens of an 8B on an H200) and
/// most of a long one's deep into it (156 of 364 ms for 512 tokens at 4,096), and forms scale apart
/// with depth, so a form is chosen where its time counts: about the mean depth of a 4,096-token
/// prompt's chunks. Where workgroups run on the CPU, the conversation's own (None), near its start:
/// there a chunk at 2,048 takes seconds a candidate, and a tuning dozens of them.
pub fn chunk_timed_at(runs_on_cpu: bool) -> Option<u32> {
    (!runs_on_cpu).then_some(2048)
}

/// A plan's attention, for finding its tuned form: a prompt's chunk, or a step's split.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttentionShape {
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    /// Tokens of the plan's runs: a prompt's chunk's, or a split step's (1; a parallel step's or a
    /// speculative check's several, whose workgroups are as many times more).
    pub tokens: u32,
    pub cache: KvType,
    /// Where each token's keys are split this many ways (a step deep into a context); None: a
    /// chunk's.
    pub splits: Option<u32>,
    /// Multi-head Latent Attention in absorbed form (DeepSeek-V2): the latent's width, which is
    /// each value's; every head's key is a whole cache row of `head_dim` (the latent, then the
    /// rope part) and `kv_heads` is 1. None: attention over heads of keys and values.
    pub latent: Option<u32>,
}

impl AttentionShape {
    pub fn key(&self) -> String {
        let AttentionShape {
            heads,
            kv_heads,
            head_dim,
            tokens,
            cache,
            splits,
            latent,
        } = self;
        let cache = cache.name();
        if let Some(latent) = latent {
            let shape = format!("mla attention {heads}x{head_dim} latent{latent}");
            return match splits {
                None => format!("{shape} x{tokens} {cache}"),
                Some(n) => format!("{shape} split{n} x{tokens} {cache}"),
            };
        }
        match splits {
            None => format!("attention {heads}x{head_dim} kv{kv_heads} x{tokens} {cache}"),
            Some(n) if *tokens == 1 => {
                format!("attention {heads}x{head_dim} kv{kv_heads} split{n} {cache}")
            }
            Some(n) => {
                format!("attention {heads}x{head_dim} kv{kv_heads} split{n} x{tokens} {cache}")
            }
        }
    }

    /// The form unless tuned on `adapter`: a query a thread, or a key a thread for a split, which
    /// every adapter runs; Multi-head Latent Attention's, `latent_default_form`.
    pub fn default_form(&self, adapter: Adapter) -> AttentionForm {
        match (self.latent, self.splits) {
            (Some(_), _) => self.latent_default_form(adapter),
            (None, None) => AttentionForm::Query,
            (None, Some(_)) => AttentionForm::SplitKeys,
        }
    }

    /// Query heads a split workgroup takes: a kv head's, up to `HEAD_GROUP`.
    pub fn split_rows(&self) -> u32 {
        (self.heads / self.kv_heads).min(HEAD_GROUP)
    }

    /// Consecutive tokens of one sequence (a speculative check's) a workgroup of the split lanes
    /// form over `lanes` lanes takes at once, so that each key and value it reads serves them all
    /// rather than each token reading the cache again: up to 4, as many as the plan's runs hold and
    /// as the lanes' registers take (`SPLIT_LANES_MAX_ROW_VEC4S`); 1 in a plan of one token.
    pub fn split_lanes_tokens(&self, lanes: u32) -> u32 {
        let row_vec4s = (self.head_dim / 4 / lanes).max(1) * self.split_rows();
        (SPLIT_LANES_MAX_ROW_VEC4S / row_vec4s)
            .clamp(1, SPLIT_TOKENS)
            .min(self.tokens.max(1))
    }

    /// Consecutive tokens of one sequence a workgroup of the key-a-thread split takes at once
    /// (`AttentionForm::SplitKeys`), each key and value it reads serving them all: up to 4, as many
    /// as the plan's runs hold (a thread holds 4 output dims of each); 1 in a plan of one token.
    pub fn split_keys_tokens(&self) -> u32 {
        SPLIT_TOKENS.min(self.tokens.max(1))
    }

    /// The forms `Engine::tune` times where the adapter offers what `offers` says (subgroups, the
    /// matrix cores plans may use) and its workgroups hold `workgroup_bytes`, the default first.
    pub fn candidates(&self, offers: Offers, adapter: Adapter) -> Vec<AttentionForm> {
        let workgroup_bytes = adapter.workgroup_bytes;
        if self.latent.is_some() {
            return self.latent_candidates(offers, adapter);
        }
        let subgroup_size = offers.subgroup_size;
        let rows = ROWS_SIZES
            .into_iter()
            .map(|(queries, keys)| AttentionForm::Rows { queries, keys });
        let lanes = (SPLIT_LANES.into_iter()).flat_map(|(lanes, columns)| {
            (SPLIT_LANES_KEYS.into_iter()).map(move |keys| AttentionForm::SplitLanes {
                lanes,
                columns,
                keys,
            })
        });
        let shuffled = rows.chain(lanes).filter(|&form| {
            let lanes = form.lanes().expect("a form that shuffles");
            subgroup_size.is_some_and(|s| s >= lanes) && self.fits(form, workgroup_bytes)
        });
        let on_cores = offers
            .matrix_cores
            .into_iter()
            .flat_map(|MatrixCores { lanes, size }| {
                (MATRIX_KEYS.into_iter()).map(move |k| AttentionForm::Matrix {
                    size,
                    lanes,
                    keys: k * size,
                })
            });
        let on_cores = on_cores.filter(|&form| self.fits(form, workgroup_bytes));
        [self.default_form(adapter)]
            .into_iter()
            .chain(shuffled)
            .chain(on_cores)
            .collect()
    }

    /// Whether an adapter whose workgroups hold `workgroup_bytes` can run the shape in `form` (the
    /// forms that shuffle also need subgroups, which `Gpu::set_tuning` checks).
    pub fn fits(&self, form: AttentionForm, workgroup_bytes: u32) -> bool {
        let d = self.head_dim;
        let split = self.splits.is_some();
        if let Some(latent) = self.latent {
            return self.latent_fits(latent, form, workgroup_bytes);
        }
        match form {
            AttentionForm::Query => !split && attention_tile_bytes(d) <= workgroup_bytes,
            // A thread holds a whole number of vec4s of a head; the merge at the end passes the
            // workgroup's output slices through the tile, which needs 16 keys.
            AttentionForm::Rows { keys, .. } => {
                !split
                    && d.is_multiple_of(4 * ROWS_HEAD_SPLIT)
                    && d <= 256
                    && keys >= 16
                    && rows_bytes(d, keys) <= workgroup_bytes
            }
            AttentionForm::SplitKeys => split,
            // A lane holds a whole number of vec4s of a head, few enough for registers.
            AttentionForm::SplitLanes {
                lanes,
                columns,
                keys,
            } => {
                split
                    && d.is_multiple_of(4 * lanes)
                    && d / 4 / lanes * keys <= SPLIT_LANES_MAX_VEC4S
                    && split_lanes_bytes(d, lanes * columns, columns) <= workgroup_bytes
            }
            // A head of whole matrices; a thread a query for the softmax, so subgroups as wide as
            // a block's queries.
            AttentionForm::Matrix { size, lanes, keys } => {
                !split
                    && d.is_multiple_of(size)
                    && d.is_multiple_of(4)
                    && keys.is_multiple_of(size)
                    && lanes >= size
                    && matrix_bytes(d, size, keys) <= workgroup_bytes
            }
            AttentionForm::Latent { .. } | AttentionForm::LatentMatrix { .. } => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GPU whose workgroups hold `workgroup_bytes`.
    pub(super) fn on_gpu(workgroup_bytes: u32) -> Adapter {
        Adapter {
            workgroup_bytes,
            runs_on_cpu: false,
            split_workgroups: SPLIT_WORKGROUPS,
        }
    }

    pub(super) fn offers(subgroup_size: Option<u32>, matrix_cores: Option<MatrixCores>) -> Offers {
        Offers {
            subgroup_size,
            matrix_cores,
            ..Offers::default()
        }
    }

    /// A split lanes workgroup takes as many of a check's tokens as a lane's registers hold queries
    /// and outputs for (16 vec4s each), up to 4 and up to the plan's runs; one in a one-token plan.
    /// A key-a-thread workgroup takes up to 4.
    #[test]
    fn split_workgroups_take_a_checks_tokens_as_registers_allow() {
        let split = |(heads, kv_heads, head_dim), tokens| AttentionShape {
            heads,
            kv_heads,
            head_dim,
            tokens,
            cache: KvType::F16,
            splits: Some(32),
            latent: None,
        };
        let llama_8b = (32, 8, 128);
        let qwen_05b = (14, 2, 64);
        // 4 heads a workgroup: 128-wide heads over 32 lanes hold a vec4 a head, over 8 lanes four.
        assert_eq!(split(llama_8b, 7).split_lanes_tokens(32), 4);
        assert_eq!(split(llama_8b, 7).split_lanes_tokens(16), 2);
        assert_eq!(split(llama_8b, 7).split_lanes_tokens(8), 1);
        assert_eq!(split(llama_8b, 3).split_lanes_tokens(32), 3);
        assert_eq!(split(llama_8b, 1).split_lanes_tokens(32), 1);
        assert_eq!(split(qwen_05b, 4).split_lanes_tokens(8), 2);
        // Gemma 4's 512-wide heads, one a kv head: 4 vec4s a lane over 32 lanes.
        assert_eq!(split((8, 8, 512), 4).split_lanes_tokens(32), 4);
        // A key a thread: up to 4, whatever the heads.
        assert_eq!(split(llama_8b, 7).split_keys_tokens(), 4);
        assert_eq!(split(qwen_05b, 3).split_keys_tokens(), 3);
        assert_eq!(split(llama_8b, 1).split_keys_tokens(), 1);
    }

    /// A chunk's attention on the matrix cores is offered where plans may use them, for heads of
    /// whole products, at the tiles of keys the adapter's workgroup memory holds; never for a split.
    #[test]
    fn matrix_forms_are_offered_where_they_run() {
        let chunk = |head_dim| AttentionShape {
            heads: 32,
            kv_heads: 8,
            head_dim,
            tokens: 512,
            cache: KvType::F16,
            splits: None,
            latent: None,
        };
        let nvidia = Some(MatrixCores {
            lanes: 32,
            size: 16,
        });
        let keys = |s: AttentionShape, cores, bytes| -> Vec<u32> {
            let forms = s
                .candidates(offers(Some(32), cores), on_gpu(bytes))
                .into_iter();
            (forms.filter_map(|f| match f {
                AttentionForm::Matrix { keys, .. } => Some(keys),
                _ => None,
            }))
            .collect()
        };
        assert_eq!(keys(chunk(128), nvidia, 49152), [32, 64]);
        assert_eq!(keys(chunk(128), nvidia, 32768), [32], "64 keys take 43 KiB");
        assert_eq!(keys(chunk(128), None, 49152), [] as [u32; 0]);
        assert_eq!(keys(chunk(72), nvidia, 49152), [] as [u32; 0], "72 / 16");
        let apple = MatrixCores { lanes: 32, size: 8 };
        assert_eq!(keys(chunk(72), Some(apple), 49152), [16, 32]);
        let narrow = MatrixCores { lanes: 8, size: 16 };
        assert_eq!(keys(chunk(128), Some(narrow), 49152), [] as [u32; 0]);
        let split = AttentionShape {
            tokens: 1,
            splits: Some(16),
            ..chunk(128)
        };
        assert_eq!(keys(split, nvidia, 49152), [] as [u32; 0]);
        let form = AttentionForm::Matrix {
            size: 16,
            lanes: 32,
            keys: 32,
        };
        assert_eq!(form.rounding(), Some(Rounding::MatrixCores));
        assert_eq!(AttentionForm::Query.rounding(), None);
    }

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
            splits: None,
            latent: None,
        };
        let rows = |s: AttentionShape, subgroups, bytes| {
            let forms = s.candidates(offers(subgroups, None), on_gpu(bytes));
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

    /// A decode step's split takes the split forms only, and a chunk's never: a key a thread
    /// everywhere, the lanes form where subgroups are as wide as its lanes and each lane's slices of
    /// the head are whole vec4s, at most 4 of them (2 where a column reads two keys at once), within
    /// the workgroup memory.
    #[test]
    fn split_forms_are_offered_where_they_run() {
        let split = |head_dim| AttentionShape {
            heads: 32,
            kv_heads: 8,
            head_dim,
            tokens: 1,
            cache: KvType::F16,
            splits: Some(16),
            latent: None,
        };
        // Each lanes form's lanes and the keys a column reads at once.
        let lanes = |s: AttentionShape, subgroups| {
            let forms = s.candidates(offers(subgroups, None), on_gpu(16384));
            assert_eq!(forms[0], AttentionForm::SplitKeys);
            let lanes: Vec<(u32, u32)> = (forms[1..].iter())
                .filter_map(|f| match *f {
                    AttentionForm::SplitLanes { lanes, keys, .. } => Some((lanes, keys)),
                    _ => None,
                })
                .collect();
            assert_eq!(lanes.len(), forms.len() - 1, "{forms:?}");
            lanes
        };
        assert_eq!(
            lanes(split(128), Some(32)),
            [(8, 1), (16, 1), (16, 2), (32, 1), (32, 2)],
            "4 lanes: 8 vec4s a lane; 8 lanes: 4, too many to read two keys at once"
        );
        assert_eq!(lanes(split(128), Some(8)), [(8, 1)]);
        assert_eq!(lanes(split(128), None), []);
        assert_eq!(lanes(split(64), Some(4)), [(4, 1)]);
        assert_eq!(
            lanes(split(64), Some(32)),
            [(4, 1), (8, 1), (8, 2), (16, 1), (16, 2)],
            "16 vec4s over 32 lanes"
        );
        assert_eq!(
            lanes(split(256), Some(32)),
            [(16, 1), (32, 1), (32, 2)],
            "8 lanes: 8 vec4s a lane"
        );
        assert_eq!(split(128).split_rows(), 4);
        assert_eq!(
            AttentionShape {
                heads: 8,
                ..split(128)
            }
            .split_rows(),
            1
        );
        let chunk = AttentionShape {
            splits: None,
            ..split(128)
        };
        assert!(chunk
            .candidates(offers(Some(32), None), on_gpu(49152))
            .iter()
            .all(|f| !matches!(
                f,
                AttentionForm::SplitKeys | AttentionForm::SplitLanes { .. }
            )));
        assert_ne!(chunk.key(), split(128).key());
    }
}

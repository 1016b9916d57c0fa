//! Compute pipelines, built from plain WGSL files by concatenation and cached by a typed key.
//!
//! A kernel that reads packed weights is `bytes.wgsl` + the type's dequant file + the kernel body: every
//! dequant file defines the same constants and `dequant32`, so one body serves every quant type. The
//! K-quant files also define a block form (`block_at`, `block_dequant32`): a block's header read once
//! for its eight sub-blocks, which `row_dot_blocks.wgsl` splits rows by.

use super::{MatvecKernel, MatvecShape, Recurrence, Split};
use crate::gguf::GgmlType;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The kernels Wick dispatches, one per WGSL body in `shaders/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// y = W x (+ y), W packed, for one token; rows may read x in groups (per-head matrices).
    Matvec,
    /// W x for one token (or four), two rows at a time, each pair stored as the `Store` says, x read
    /// as the `XNorm` says.
    MatvecPairs(Store, XNorm),
    /// X W^T, W packed, for the tokens of a prompt's chunk, each pair of rows stored as the `Store` says.
    Matmul(Store),
    /// `Matmul` on the adapter's matrix cores, in products of the size given (8 or 16): f16 tiles, f32
    /// sums (shaders/matmul_coop.wgsl).
    MatmulCoop(Store, u32),
    /// Matvecs over the experts a router chose, by index.
    MatvecId,
    /// Rows of a packed table, dequantized.
    Embed,
    RmsNorm,
    /// LayerNorm with a bias, written back into the residual and into the normed rows.
    LayerNorm,
    /// A row of a table added to each token's row: its position's, or the one row.
    AddPosition,
    /// Causal attention of the run's queries over a cache of this type, a workgroup per head and
    /// token.
    Attention(KvType),
    /// A run's attention in tiles of keys held in workgroup memory, a query a thread, for heads of
    /// the dimensions given, over a cache of the type given.
    AttentionTiled(u32, KvType),
    /// One token's attention split over the sequence, and the merge of the splits.
    AttentionSplit(KvType),
    AttentionMerge,
    /// h = activation(gate) * up
    Glu(Activation),
    /// q and k normed per head and rotated, k and v written into a cache of this type.
    HeadNormRopeKv(KvType),
    /// x += rmsnorm(t) * w, then the next norm of x.
    NormAddNorm,
    /// A mixture-of-experts router: probabilities, top-k, weights, for each token of the run.
    MoeRoute,
    /// The run's (token, slot) pairs listed by the expert they were routed to.
    MoeGroup,
    /// X W_e^T over the experts' lists: a chunk's experts, each read once for its tokens.
    MatmulId,
    /// X W^T for the tokens of a run, W's rows in groups that each read their own slice of x.
    MatmulGrouped,
    /// Each token's experts' outputs summed by weight into the residual.
    MoeCombine,
    /// The log-probability of each token's successor, from its row of logits.
    TokenLogProb,
    /// x = cap * tanh(x / cap), in place.
    Softcap,
    /// A run's last row copied to row 0.
    LastRow,
    /// The index of each row's largest value.
    Argmax,
    /// The repetition penalty on the logits of the sampler's recent tokens, in place.
    Penalize,
    /// log(sum(exp(x))) over one row: the sampler's log-probabilities.
    LogSumExp,
    /// One level of the sampler's top-k: each slice's k largest values with their ids.
    TopK,
    /// A token drawn from a row at a temperature, within min-p (the Gumbel-max draw).
    Draw,
    /// The sampler's choice among its top-k candidates: top-p, min-p, the temperature, a draw.
    Choose,
    /// MLA's cache row: the latent normed, the rope part rotated.
    MlaKv,
    /// MLA in absorbed form, in the latent space, a workgroup per head and token.
    MlaAttention,
    /// Gated DeltaNet's causal convolution over its channels, with a rolling state.
    DeltaConv,
    /// Gated DeltaNet's recurrence, a workgroup per value head, its state updated token by token.
    DeltaNet,
    /// Gated DeltaNet's recurrence over a prompt's run in chunks of `tokens` (the WY form), a
    /// workgroup of `workgroup` threads (the head dimension) per value head.
    DeltaNetChunks,
    /// x *= sigmoid(gate): gated attention's output gate.
    SigmoidGate,
    /// Each layer's per-layer input from the projected embedding and the token's row (Gemma 4).
    PerLayerInputs,
    /// y += a bias row, or each slot's expert's row, or the slots' rows by weight.
    AddBias,
    /// A grid of rows averaged in squares, then scaled per value (Gemma 3's and Gemma 4's vision
    /// tokens).
    AvgPool,
    /// Each patch's rows of the column and row position tables added (Gemma 4's vision encoder).
    GridPositions,
    /// A learned table of positions resized to the patch grid and added (Qwen-VL's vision encoder).
    ResizedPositions,
    /// Heads RMS-normed and rotated by their patch's column and row (Gemma 4's and Qwen-VL's vision
    /// encoders).
    HeadNormRope2d,
    /// Rows clamped to bounds.
    Clamp,
}

/// What the kernels that compute W's rows in pairs do with a pair (shaders/store_*.wgsl): the fusions
/// of the projections with the step that follows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Store {
    /// Both rows as they are (+ y, the residual add).
    Rows,
    /// activation(gate) * up, from gate's and up's rows interleaved.
    Glu(Activation),
    /// q and k rotated by RoPE, k and v written into a cache of this type.
    RopeKv(KvType),
}

/// How a KV cache holds its values (shaders/kv_f32.wgsl, kv_f16.wgsl).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KvType {
    #[default]
    F32,
    /// Two values to a u32, as pack2x16float makes them: half the memory and the bytes read.
    F16,
}

impl KvType {
    /// Bytes of one value.
    pub fn value_bytes(self) -> u64 {
        match self {
            KvType::F32 => 4,
            KvType::F16 => 2,
        }
    }

    fn source(self) -> &'static str {
        match self {
            KvType::F32 => include_str!("../../shaders/kv_f32.wgsl"),
            KvType::F16 => include_str!("../../shaders/kv_f16.wgsl"),
        }
    }
}

/// How a product's kernel reads x: as it is (shaders/x_rows.wgsl), or normed by RMSNorm on the way
/// in (shaders/x_rms_norm.wgsl), the norm's eps as f32 bits; its gain binds at `NORM_GAIN_BINDING`.
/// The norm's own dispatch goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum XNorm {
    None,
    Rms(u32),
}

impl XNorm {
    fn source(self) -> &'static str {
        match self {
            XNorm::None => include_str!("../../shaders/x_rows.wgsl"),
            XNorm::Rms(_) => include_str!("../../shaders/x_rms_norm.wgsl"),
        }
    }
}

/// Where a kernel that norms its x (`XNorm::Rms`) binds the norm's gain: past every store's bindings
/// (shaders/x_rms_norm.wgsl).
pub const NORM_GAIN_BINDING: u32 = 15;

/// How a gated feed-forward block makes h from gate and up (shaders/activation/*.wgsl define `glu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activation {
    /// SwiGLU: silu(gate) * up, silu(x) = x * sigmoid(x).
    Silu,
    /// GeGLU: GELU(gate) * up, GELU in its tanh approximation.
    GeluTanh,
    /// GELU(gate) * up, GELU in its quick approximation, x * sigmoid(1.702 x).
    GeluQuick,
    /// gpt-oss's SwiGLU: gate clamped above at 7, up to [-7, 7], then gate * sigmoid(1.702 gate) *
    /// (up + 1).
    SwigluOai,
}

impl Activation {
    fn source(self) -> &'static str {
        match self {
            Activation::Silu => include_str!("../../shaders/activation/silu.wgsl"),
            Activation::GeluTanh => include_str!("../../shaders/activation/gelu.wgsl"),
            Activation::GeluQuick => include_str!("../../shaders/activation/gelu_quick.wgsl"),
            Activation::SwigluOai => include_str!("../../shaders/activation/swiglu_oai.wgsl"),
        }
    }

    /// CPU reference: h from one gate and up value.
    pub fn glu(self, gate: f32, up: f32) -> f32 {
        match self {
            Activation::Silu => gate / (1.0 + (-gate).exp()) * up,
            Activation::GeluTanh => {
                let u = 0.797_884_6 * gate * (1.0 + 0.044715 * gate * gate);
                0.5 * gate * (1.0 + u.tanh()) * up
            }
            Activation::GeluQuick => gate / (1.0 + (-1.702 * gate).exp()) * up,
            Activation::SwigluOai => {
                let (g, u) = (gate.min(7.0), up.clamp(-7.0, 7.0));
                g / (1.0 + (-1.702 * g).exp()) * (u + 1.0)
            }
        }
    }
}

impl Store {
    fn source(self) -> String {
        match self {
            Store::Rows => include_str!("../../shaders/store_rows.wgsl").into(),
            Store::Glu(act) => {
                [act.source(), include_str!("../../shaders/store_glu.wgsl")].concat()
            }
            Store::RopeKv(kv) => [
                kv.source(),
                include_str!("../../shaders/rope.wgsl"),
                include_str!("../../shaders/store_rope_kv.wgsl"),
            ]
            .concat(),
        }
    }
}

impl Kernel {
    /// The kernel's WGSL: the shared files it needs, then its body. Kernels that split rows over
    /// threads take `row_dot` and `row_sum`, the files that split them and sum their parts.
    fn body(self, row_dot: &str, row_sum: &str) -> String {
        macro_rules! wgsl {
            ($($file:literal),+) => { concat!($(include_str!(concat!("../../shaders/", $file))),+) };
        }
        let body = match self {
            Kernel::Matvec => {
                return [wgsl!("x_rows.wgsl"), row_dot, wgsl!("matvec.wgsl"), row_sum].concat()
            }
            Kernel::MatvecPairs(store, x) => {
                let body = wgsl!("matvec_pairs.wgsl");
                let head = [wgsl!("step.wgsl"), x.source()].concat();
                return [&head, row_dot, body, row_sum, &store.source()].concat();
            }
            Kernel::Matmul(store) => {
                let body = wgsl!("step.wgsl", "matmul_tile.wgsl", "matmul.wgsl");
                return [body, &store.source()].concat();
            }
            Kernel::MatmulCoop(store, _) => {
                return [wgsl!("step.wgsl", "matmul_coop.wgsl"), &store.source()].concat();
            }
            Kernel::MatvecId => {
                let body = wgsl!("matvec_id.wgsl");
                return [wgsl!("x_rows.wgsl"), row_dot, body, row_sum].concat();
            }
            Kernel::Embed => wgsl!("step.wgsl", "embed.wgsl"),
            Kernel::RmsNorm => wgsl!("step.wgsl", "reduce.wgsl", "rms_norm.wgsl"),
            Kernel::LayerNorm => wgsl!("step.wgsl", "reduce.wgsl", "layer_norm.wgsl"),
            Kernel::AddPosition => wgsl!("step.wgsl", "add_position.wgsl"),
            Kernel::Attention(kv) => {
                let body = wgsl!(
                    "step.wgsl",
                    "key_range.wgsl",
                    "attention_params.wgsl",
                    "attend.wgsl",
                    "head_keys.wgsl",
                    "attention.wgsl"
                );
                return [kv.source(), body].concat();
            }
            Kernel::AttentionSplit(kv) => {
                let body = wgsl!(
                    "step.wgsl",
                    "key_range.wgsl",
                    "attend.wgsl",
                    "head_keys.wgsl",
                    "attention_split.wgsl"
                );
                return [kv.source(), body].concat();
            }
            Kernel::AttentionMerge => wgsl!("attention_merge.wgsl"),
            Kernel::Glu(act) => return [act.source(), wgsl!("step.wgsl", "glu.wgsl")].concat(),
            Kernel::HeadNormRopeKv(kv) => {
                let body = wgsl!(
                    "step.wgsl",
                    "rope.wgsl",
                    "reduce.wgsl",
                    "head_norm_rope_kv.wgsl"
                );
                return [kv.source(), body].concat();
            }
            Kernel::NormAddNorm => wgsl!("step.wgsl", "reduce.wgsl", "norm_add_norm.wgsl"),
            Kernel::MoeRoute => wgsl!("step.wgsl", "moe_route.wgsl"),
            Kernel::MoeGroup => wgsl!("step.wgsl", "moe_group.wgsl"),
            Kernel::MatmulId => wgsl!("matmul_tile.wgsl", "matmul_id.wgsl"),
            Kernel::MatmulGrouped => wgsl!("step.wgsl", "matmul_tile.wgsl", "matmul_grouped.wgsl"),
            Kernel::MoeCombine => wgsl!("step.wgsl", "moe_combine.wgsl"),
            Kernel::TokenLogProb => wgsl!("step.wgsl", "reduce.wgsl", "token_log_prob.wgsl"),
            Kernel::Softcap => wgsl!("step.wgsl", "softcap.wgsl"),
            Kernel::LastRow => wgsl!("step.wgsl", "last_row.wgsl"),
            Kernel::Argmax => wgsl!("step.wgsl", "argmax.wgsl"),
            Kernel::Penalize => wgsl!("pick.wgsl", "penalize.wgsl"),
            Kernel::LogSumExp => wgsl!("reduce.wgsl", "log_sum_exp.wgsl"),
            Kernel::TopK => wgsl!("pick.wgsl", "top_k.wgsl"),
            Kernel::Draw => wgsl!("reduce.wgsl", "draw.wgsl"),
            Kernel::Choose => wgsl!("choose.wgsl"),
            Kernel::MlaKv => wgsl!("step.wgsl", "rope.wgsl", "reduce.wgsl", "mla_kv.wgsl"),
            Kernel::MlaAttention => {
                // MLA's latent cache stays f32.
                let body = wgsl!(
                    "step.wgsl",
                    "rope.wgsl",
                    "attend.wgsl",
                    "mla_attention.wgsl"
                );
                return [KvType::F32.source(), body].concat();
            }
            Kernel::DeltaConv => wgsl!("step.wgsl", "delta_conv.wgsl"),
            Kernel::DeltaNet => {
                wgsl!(
                    "step.wgsl",
                    "reduce.wgsl",
                    "delta_rule.wgsl",
                    "delta_net.wgsl"
                )
            }
            Kernel::DeltaNetChunks => {
                wgsl!("step.wgsl", "delta_rule.wgsl", "delta_net_chunks.wgsl")
            }
            Kernel::SigmoidGate => wgsl!("step.wgsl", "sigmoid_gate.wgsl"),
            Kernel::AddBias => wgsl!("step.wgsl", "add_bias.wgsl"),
            Kernel::AvgPool => wgsl!("grid.wgsl", "avg_pool.wgsl"),
            Kernel::GridPositions => wgsl!("step.wgsl", "grid.wgsl", "grid_positions.wgsl"),
            Kernel::ResizedPositions => {
                wgsl!("step.wgsl", "grid.wgsl", "resized_positions.wgsl")
            }
            Kernel::HeadNormRope2d => {
                wgsl!(
                    "step.wgsl",
                    "reduce.wgsl",
                    "grid.wgsl",
                    "head_norm_rope_2d.wgsl"
                )
            }
            Kernel::Clamp => wgsl!("step.wgsl", "clamp.wgsl"),
            Kernel::AttentionTiled(_, kv) => {
                let body = wgsl!(
                    "step.wgsl",
                    "key_range.wgsl",
                    "attention_params.wgsl",
                    "attention_tiled.wgsl"
                );
                return [kv.source(), body].concat();
            }
            Kernel::PerLayerInputs => wgsl!("step.wgsl", "reduce.wgsl", "per_layer_inputs.wgsl"),
        };
        body.to_string()
    }
}

/// The WGSL that defines `BLOCK_LEN`, `BLOCK_BYTES` and `dequant32` for a type.
fn dequant_source(ty: GgmlType) -> &'static str {
    match ty {
        GgmlType::F32 => include_str!("../../shaders/dequant/f32.wgsl"),
        GgmlType::F16 => include_str!("../../shaders/dequant/f16.wgsl"),
        GgmlType::BF16 => include_str!("../../shaders/dequant/bf16.wgsl"),
        GgmlType::Q4_0 => include_str!("../../shaders/dequant/q4_0.wgsl"),
        GgmlType::Q4_1 => include_str!("../../shaders/dequant/q4_1.wgsl"),
        GgmlType::Q5_0 => include_str!("../../shaders/dequant/q5_0.wgsl"),
        GgmlType::Q5_1 => include_str!("../../shaders/dequant/q5_1.wgsl"),
        GgmlType::Q8_0 => include_str!("../../shaders/dequant/q8_0.wgsl"),
        GgmlType::Q4_K => include_str!("../../shaders/dequant/q4_k.wgsl"),
        GgmlType::Q5_K => include_str!("../../shaders/dequant/q5_k.wgsl"),
        GgmlType::Q6_K => include_str!("../../shaders/dequant/q6_k.wgsl"),
        GgmlType::MXFP4 => include_str!("../../shaders/dequant/mxfp4.wgsl"),
    }
}

/// Whether the type's dequant file has a block form (`block_at`, `block_dequant32`) for
/// shaders/row_dot_blocks.wgsl: the K-quants, whose headers are worth decoding once per block.
pub fn has_block_form(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K)
}

/// The threads that share one of the type's blocks in shaders/row_dot_parts.wgsl (its dequant file's
/// `PARTS`), and the weights a block holds there: 16 threads a 256-weight K-quant block, 4 a block of
/// 32 weights for the rest (the float types' 32-weight runs included).
pub fn block_parts(ty: GgmlType) -> (u32, u32) {
    match has_block_form(ty) {
        true => (16, 256),
        false => (4, 32),
    }
}

/// The tile of W's rows by X's tokens a matmul workgroup computes (shaders/matmul_tile.wgsl).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulTile {
    pub rows: u32,
    pub tokens: u32,
    /// Rows of the tile one thread accumulates, each for 4 tokens.
    pub rows_per_thread: u32,
}

impl MatmulTile {
    /// Workgroup memory it takes: a 32-weight step of its rows and tokens, and where each token's
    /// row starts.
    pub fn workgroup_bytes(&self) -> u32 {
        (8 * self.rows + 8 * self.tokens) * 16 + self.tokens * 4
    }
}

/// A matmul's tile by its threads. 64 (every adapter) take 64 rows by 16 tokens, 4 rows by 4 tokens
/// each; 256 take 128 rows by 64 tokens, 8 rows by 4 each: a dequantized weight meets 64 tokens
/// rather than 16, and a thread's read of workgroup memory feeds twice the products (llama.cpp's
/// tiled products are of this size), for 24.3 KiB of workgroup memory; 128 take 128 rows by 32
/// tokens, 8 rows by 4 each, for 20.1 KiB: twice the workgroups of a short chunk.
pub fn matmul_tile(workgroup: u32) -> MatmulTile {
    match workgroup {
        256 => MatmulTile {
            rows: 128,
            tokens: 64,
            rows_per_thread: 8,
        },
        128 => MatmulTile {
            rows: 128,
            tokens: 32,
            rows_per_thread: 8,
        },
        _ => MatmulTile {
            rows: 64,
            tokens: 16,
            rows_per_thread: 4,
        },
    }
}

/// `Kernel::AttentionTiled(head_dim)`'s sizes: the vec4s of a head, and the keys of a tile, whose
/// keys and values fill up to 16 KiB of workgroup memory (32 keys of 64 dimensions, 16 of 128, 8 of
/// 256).
pub const fn attention_tile(head_dim: u32) -> (u32, u32) {
    let vec4s = head_dim / 4;
    (vec4s, 512 / vec4s)
}

/// The workgroup memory of `Kernel::AttentionTiled(head_dim)`: the tiles, and the workgroup's range.
pub const fn attention_tile_bytes(head_dim: u32) -> u32 {
    let (vec4s, keys) = attention_tile(head_dim);
    2 * vec4s * keys * 16 + 16
}

/// The tile of `Kernel::MatmulCoop`: 64 rows by 64 tokens, in blocks of 2S x 2S, a subgroup each, for
/// products of S x S (shaders/matmul_coop.wgsl).
pub const COOP_TILE: MatmulTile = MatmulTile {
    rows: 64,
    tokens: 64,
    rows_per_thread: 0,
};

/// The subgroups of a `COOP_TILE` workgroup for products of `size` x `size`.
pub const fn coop_subgroups(size: u32) -> u32 {
    (COOP_TILE.rows / (2 * size)) * (COOP_TILE.tokens / (2 * size))
}

/// The workgroup memory of a `COOP_TILE` workgroup: f16 tiles of 40 values a row (matmul_coop.wgsl's
/// KS) for its rows and tokens, the sums of a quarter of each subgroup's block (a product's), and
/// where each token's row starts.
pub const fn coop_workgroup_bytes(size: u32) -> u32 {
    (COOP_TILE.rows + COOP_TILE.tokens) * 40 * 2
        + coop_subgroups(size) * size * size * 4
        + COOP_TILE.tokens * 4
}

/// Identifies one compiled pipeline: the kernel, the weight type it reads (if any) and its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PipelineKey {
    pub kernel: Kernel,
    pub ty: Option<GgmlType>,
    /// Threads per workgroup (the `WG` override constant).
    pub workgroup: u32,
    /// Threads that share one row, for kernels that take rows (the `TPR` override constant).
    pub threads_per_row: Option<u32>,
    /// Those threads sum by subgroup shuffles rather than through workgroup memory.
    pub subgroup_sum: bool,
    /// How those threads divide a row.
    pub split: Split,
    /// Tokens a layer of `Kernel::MatvecPairs` workgroups takes, where not one (the `TOKENS`
    /// override constant of shaders/matvec_pairs.wgsl); tokens an attention workgroup takes (the
    /// `TQ` constant of shaders/attend.wgsl).
    pub tokens: Option<u32>,
}

impl PipelineKey {
    pub fn new(kernel: Kernel, ty: Option<GgmlType>) -> PipelineKey {
        PipelineKey {
            kernel,
            ty,
            workgroup: 64,
            threads_per_row: None,
            subgroup_sum: false,
            split: Split::Chunks,
            tokens: None,
        }
    }

    /// The kernel of a Gated DeltaNet recurrence in a form: a workgroup per value head, a thread per
    /// dimension of a head.
    pub fn recurrence(dim: u32, form: Recurrence) -> PipelineKey {
        match form {
            Recurrence::Tokens => PipelineKey {
                workgroup: dim,
                ..PipelineKey::new(Kernel::DeltaNet, None)
            },
            Recurrence::Chunks(chunk) => PipelineKey {
                workgroup: dim,
                tokens: Some(chunk),
                ..PipelineKey::new(Kernel::DeltaNetChunks, None)
            },
        }
    }

    /// The kernel of a matvec shape (`Kernel::Matvec`, `MatvecPairs`, `MatvecId` or `Matmul`) in a
    /// kernel shape.
    pub fn matvec(shape: &MatvecShape, kernel: MatvecKernel) -> PipelineKey {
        let key = PipelineKey {
            workgroup: kernel.workgroup,
            ..PipelineKey::new(shape.kernel, Some(shape.ty))
        };
        match (shape.kernel, kernel.cooperative) {
            (Kernel::Matmul(store), Some(size)) => PipelineKey {
                kernel: Kernel::MatmulCoop(store, size),
                ..key
            },
            // A tile, named by its workgroup size alone.
            (Kernel::Matmul(_), None) => key,
            _ => PipelineKey {
                threads_per_row: Some(kernel.threads_per_row),
                subgroup_sum: kernel.subgroup_sum,
                split: kernel.split,
                tokens: (shape.tokens > 1).then_some(shape.tokens),
                ..key
            },
        }
    }

    /// The tile of the kernels that multiply tiles (shaders/matmul_tile.wgsl), by the workgroup size.
    pub fn tile(&self) -> Option<MatmulTile> {
        match self.kernel {
            Kernel::Matmul(_) | Kernel::MatmulId | Kernel::MatmulGrouped => {
                Some(matmul_tile(self.workgroup))
            }
            Kernel::MatmulCoop(..) => Some(COOP_TILE),
            _ => None,
        }
    }

    /// A short name for profiles: kernel, weight type and shape.
    pub fn name(&self) -> String {
        let mut name = match self.kernel {
            // How x is read is said at the end.
            Kernel::MatvecPairs(store, _) => format!("matvecpairs({store:?})").to_lowercase(),
            kernel => format!("{kernel:?}").to_lowercase(),
        };
        if let Some(ty) = self.ty {
            name += &format!(" {ty:?}");
        }
        if let Some(tpr) = self.threads_per_row {
            name += &format!(" wg{} tpr{tpr}", self.workgroup);
        }
        if let Some(tile) = self.tile() {
            name += &format!(" tile {}x{}", tile.rows, tile.tokens);
        }
        if self.subgroup_sum {
            name += " subgroup";
        }
        match self.split {
            Split::Chunks => {}
            Split::Blocks => name += " blocks",
            Split::BlockParts => name += " block-parts",
        }
        if let Some(tokens) = self.tokens {
            name += &format!(" x{tokens}");
        }
        if let Kernel::MatvecPairs(_, XNorm::Rms(_)) = self.kernel {
            name += " rms-normed";
        }
        name
    }

    fn constants(&self) -> Vec<(&'static str, f64)> {
        let mut c = vec![("WG", self.workgroup as f64)];
        if let Some(tpr) = self.threads_per_row {
            c.push(("TPR", tpr as f64));
        }
        if let (Some(tokens), Kernel::MatvecPairs(..)) = (self.tokens, self.kernel) {
            c.push(("TOKENS", tokens as f64));
        }
        if let Kernel::MatvecPairs(_, XNorm::Rms(eps)) = self.kernel {
            c.push(("NORM_EPS", f32::from_bits(eps) as f64));
        }
        c
    }

    pub fn source(&self) -> String {
        let mut src = String::new();
        if let Kernel::MatmulCoop(_, size) = self.kernel {
            // Directives come first. The matrices' loads, multiplies and stores run in subgroups
            // that branch apart by their subgroup id, uniform within each: what SPIR-V asks of them,
            // and what naga's analysis, which knows only the workgroup, cannot see.
            src += "enable f16;\nenable wgpu_cooperative_matrix;\n";
            src += "diagnostic(off, derivative_uniformity);\n";
            src += &format!("const S: u32 = {size}u;\n");
            for (name, ty, role) in [
                ("MatA", "f16", "A"),
                ("MatB", "f16", "B"),
                ("MatC", "f32", "C"),
            ] {
                src += &format!("alias {name} = coop_mat{size}x{size}<{ty}, {role}>;\n");
            }
        }
        if let Some(tile) = self.tile() {
            src += &format!(
                "const TM: u32 = {}u;\nconst TN: u32 = {}u;\nconst RB: u32 = {}u;\n",
                tile.rows, tile.tokens, tile.rows_per_thread
            );
        }
        if let Kernel::Attention(_) | Kernel::AttentionSplit(_) | Kernel::MlaAttention = self.kernel
        {
            // Queries a workgroup takes (attend.wgsl): sizes of its arrays.
            src += &format!("const TQ: u32 = {}u;\n", self.tokens.unwrap_or(1));
        }
        if let Kernel::AttentionTiled(head_dim, _) = self.kernel {
            // A thread's query and output rows, and the keys a tile holds: 16 KiB of keys and values.
            let (vec4s, keys) = attention_tile(head_dim);
            src += &format!("const HD4: u32 = {vec4s}u;\nconst BK: u32 = {keys}u;\n");
        }
        if let Kernel::DeltaNetChunks = self.kernel {
            // The chunk's tiles and a thread's column of the state are sized by these.
            let chunk = self
                .tokens
                .expect("a chunked recurrence's key says its chunk");
            src += &format!(
                "const CHUNK: u32 = {chunk}u;\nconst DIM: u32 = {}u;\n",
                self.workgroup
            );
        }
        if let Some(ty) = self.ty {
            src.push_str(include_str!("../../shaders/dequant/bytes.wgsl"));
            src.push_str(dequant_source(ty));
        }
        let row_sum = match self.subgroup_sum {
            false => include_str!("../../shaders/row_sum.wgsl"),
            true => include_str!("../../shaders/row_sum_subgroup.wgsl"),
        };
        let row_dot = match self.split {
            Split::Chunks => include_str!("../../shaders/row_dot.wgsl"),
            Split::Blocks => include_str!("../../shaders/row_dot_blocks.wgsl"),
            Split::BlockParts => include_str!("../../shaders/row_dot_parts.wgsl"),
        };
        src.push_str(&self.kernel.body(row_dot, row_sum));
        src
    }
}

#[derive(Default)]
pub struct Pipelines {
    cache: Mutex<HashMap<PipelineKey, Arc<wgpu::ComputePipeline>>>,
}

impl Pipelines {
    pub fn get(&self, device: &wgpu::Device, key: PipelineKey) -> Arc<wgpu::ComputePipeline> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(key)
            .or_insert_with(|| {
                let label = format!("{key:?}");
                let desc = wgpu::ShaderModuleDescriptor {
                    label: Some(&label),
                    source: wgpu::ShaderSource::Wgsl(key.source().into()),
                };
                // Bounds checks stay; the loop bounding that naga otherwise adds to every loop (a
                // counter that breaks out of a loop running "forever") goes: it keeps drivers from
                // unrolling the kernels' inner loops, and on an H100 through Vulkan decode ran 2.3x
                // to 5.8x slower with it (BENCHMARKS.md). Safe because every loop in shaders/ ends
                // whatever its parameters: each steps toward its bound by a constant or by an
                // override constant of at least 1 (WG, TPR), or halves a count down to 0. A new
                // loop must too. (The browser's WebGPU ignores these options and checks for itself.)
                let checks = wgpu::ShaderRuntimeChecks {
                    force_loop_bounding: false,
                    ..wgpu::ShaderRuntimeChecks::checked()
                };
                #[allow(unsafe_code)]
                let module = unsafe { device.create_shader_module_trusted(desc, checks) };
                Arc::new(
                    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(&label),
                        layout: None,
                        module: &module,
                        entry_point: Some("main"),
                        compilation_options: wgpu::PipelineCompilationOptions {
                            constants: &key.constants(),
                            zero_initialize_workgroup_memory: false,
                        },
                        cache: None,
                    }),
                )
            })
            .clone()
    }
}

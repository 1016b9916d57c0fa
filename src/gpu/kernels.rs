//! The kernels Wick dispatches and the WGSL each is built from: plain files from `shaders/`
//! concatenated. A kernel that reads packed weights is `bytes.wgsl` + the type's dequant file + the
//! kernel body: every dequant file defines the same constants and `dequant32`, so one body serves
//! every quant type. The K-quant files also define a block form (`block_at`, `block_dequant32`): a
//! block's header read once for its eight sub-blocks, which `row_dot_blocks.wgsl` splits rows by.

use super::tiles::CoopTile;
use crate::gguf::GgmlType;

/// The named files of shaders/, concatenated at compile time.
macro_rules! wgsl {
    ($($file:literal),+) => { concat!($(include_str!(concat!("../../shaders/", $file))),+) };
}
pub(super) use wgsl;

/// The kernels Wick dispatches, one per WGSL body in `shaders/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// y = W x (+ y), W packed, for one token; rows may read x in groups (per-head matrices).
    Matvec,
    /// W x for one token (or four), two rows at a time, each pair stored as the `Store` says, x read
    /// as the `XNorm` says.
    MatvecPairs(Store, XNorm),
    /// X W^T, W packed, for the tokens of a prompt's chunk (or of a step, `MatvecShape::takes_tiles`),
    /// each pair of rows stored as the `Store` says, x read as the `XNorm` says.
    Matmul(Store, XNorm),
    /// `Matmul` on the adapter's matrix cores, in products of the size given (8 or 16), in the tile
    /// given: f16 tiles, f32 sums (shaders/matmul_coop.wgsl).
    MatmulCoop(Store, u32, CoopTile),
    /// `MatmulId` on the adapter's matrix cores, in products of the size given (as `MatmulCoop`, in
    /// a square tile, `CoopTile::Square` or `SquareAhead`).
    MatmulIdCoop(u32, CoopTile),
    /// Matvecs over the experts a router chose, by index.
    MatvecId,
    /// h over the experts a router chose, by index: their gate and up rows interleaved, each pair's
    /// sums made into h by the activation, x read as the `XNorm` says.
    MatvecIdGlu(Activation, XNorm),
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
    /// The same in blocks of queries whose heads are split over threads of a subgroup, for heads
    /// of the dimensions given, over a cache of the type given, in tiles of the keys given.
    AttentionRows(u32, KvType, u32),
    /// The same on the adapter's matrix cores, for heads of the dimensions given, over a cache of
    /// the type given, in products of the size given, in tiles of the keys given.
    AttentionCoop(u32, KvType, u32, u32),
    /// One token's attention split over the sequence, and the merge of the splits.
    AttentionSplit(KvType),
    /// The same with a head's dims split over neighbouring lanes of a subgroup, for heads of the
    /// dimensions given, over a cache of the type given, a head split over the lanes given, up to
    /// the rows (query heads of a kv head) given a workgroup, each column of keys reading the keys
    /// given at once.
    AttentionSplitLanes(u32, KvType, u32, u32, u32),
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
    /// Each part of each row's largest value, its index and the sum of exp(x - it): greedy's first
    /// pass.
    ArgmaxParts,
    /// The index of each row's largest value, and its chance, from the first pass's parts.
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
    /// MLA's cache row, into a cache of this type: the latent normed, the rope part rotated.
    MlaKv(KvType),
    /// MLA in absorbed form, in the latent space, over a cache of this type, a workgroup per group
    /// of heads and token (or tokens).
    MlaAttention(KvType),
    /// The same for a prompt's chunk on the adapter's matrix cores, for a latent and a rope part of
    /// the widths given, over a cache of the type given, in products of the size given, in tiles of
    /// the keys given.
    MlaAttentionCoop(u32, u32, KvType, u32, u32),
    /// Gated DeltaNet's causal convolution over its channels, with a rolling state.
    DeltaConv,
    /// Gated DeltaNet's recurrence, a workgroup per value head, its state updated token by token.
    DeltaNet,
    /// The same with the causal convolution of its q, k and v done on the way in (a step's few
    /// tokens), each value head keeping its own copy of their last inputs.
    DeltaNetConv,
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
    /// Two matrices' rows stacked, each matrix's to an output of its own.
    Apart,
    /// activation(row) * the same row of another input (Gemma's per-layer input gate).
    GluWith(Activation),
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
    /// "f32" or "f16", as `--cache-type` and the package's `kvCache` name it.
    pub fn name(self) -> &'static str {
        match self {
            KvType::F32 => "f32",
            KvType::F16 => "f16",
        }
    }

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
    /// How the row_dot files read x.
    fn source(self) -> &'static str {
        match self {
            XNorm::None => include_str!("../../shaders/x_rows.wgsl"),
            XNorm::Rms(_) => include_str!("../../shaders/x_rms_norm.wgsl"),
        }
    }

    /// How the tile files read x.
    fn tile_source(self) -> &'static str {
        match self {
            XNorm::None => include_str!("../../shaders/tile_x_rows.wgsl"),
            XNorm::Rms(_) => include_str!("../../shaders/tile_x_rms_norm.wgsl"),
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
            Store::Apart => include_str!("../../shaders/store_apart.wgsl").into(),
            Store::GluWith(act) => [
                act.source(),
                include_str!("../../shaders/store_glu_with.wgsl"),
            ]
            .concat(),
        }
    }
}

impl Kernel {
    /// How the kernel reads x: normed on the way in, or as it is (the kernels that take no `XNorm`).
    pub fn x_norm(self) -> XNorm {
        match self {
            Kernel::MatvecPairs(_, x) | Kernel::Matmul(_, x) | Kernel::MatvecIdGlu(_, x) => x,
            _ => XNorm::None,
        }
    }

    /// The size of the matrix cores' products, for the kernels that run on them.
    pub fn cooperative_size(self) -> Option<u32> {
        match self {
            Kernel::MatmulCoop(_, size, _)
            | Kernel::MatmulIdCoop(size, _)
            | Kernel::AttentionCoop(_, _, size, _)
            | Kernel::MlaAttentionCoop(_, _, _, size, _) => Some(size),
            _ => None,
        }
    }

    /// The tile of the kernels on the matrix cores.
    pub fn coop_tile(self) -> Option<CoopTile> {
        match self {
            Kernel::MatmulCoop(_, _, tile) | Kernel::MatmulIdCoop(_, tile) => Some(tile),
            _ => None,
        }
    }

    /// The kernel's WGSL: the shared files it needs, then its body. Kernels that split rows over
    /// threads take `row_dot` and `row_sum`, the files that split them and sum their parts.
    pub(super) fn body(self, row_dot: &str, row_sum: &str) -> String {
        let body = match self {
            Kernel::Matvec => {
                return [wgsl!("x_rows.wgsl"), row_dot, wgsl!("matvec.wgsl"), row_sum].concat()
            }
            Kernel::MatvecPairs(store, x) => {
                let body = wgsl!("matvec_pairs.wgsl");
                let head = [wgsl!("step.wgsl"), x.source()].concat();
                return [&head, row_dot, body, row_sum, &store.source()].concat();
            }
            // The tile products' tile file comes with the tile (`PipelineKey::source`).
            Kernel::Matmul(store, x) => {
                let body = wgsl!("step.wgsl", "matmul_io.wgsl", "matmul.wgsl");
                return [body, x.tile_source(), &store.source()].concat();
            }
            Kernel::MatmulCoop(store, ..) => {
                let body = wgsl!("step.wgsl", "matmul_io.wgsl", "matmul_coop.wgsl");
                return [body, &store.source()].concat();
            }
            Kernel::MatmulIdCoop(..) => wgsl!("expert_items.wgsl", "matmul_id_coop.wgsl"),
            Kernel::MatvecId => {
                let body = wgsl!("matvec_id.wgsl");
                return [wgsl!("x_rows.wgsl"), row_dot, body, row_sum].concat();
            }
            Kernel::MatvecIdGlu(act, x) => {
                let body = wgsl!("matvec_id_glu.wgsl");
                return [act.source(), x.source(), row_dot, body, row_sum].concat();
            }
            Kernel::Embed => wgsl!("step.wgsl", "embed.wgsl"),
            Kernel::RmsNorm => wgsl!("step.wgsl", "reduce.wgsl", "rms_norm.wgsl"),
            Kernel::LayerNorm => wgsl!("step.wgsl", "reduce.wgsl", "layer_norm.wgsl"),
            Kernel::AddPosition => wgsl!("step.wgsl", "add_position.wgsl"),
            Kernel::Attention(kv) => {
                let body = wgsl!(
                    "step.wgsl",
                    "key_range.wgsl",
                    "check_tokens.wgsl",
                    "attention_params.wgsl",
                    "head_group.wgsl",
                    "key_walk.wgsl",
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
                    "check_tokens.wgsl",
                    "split_params.wgsl",
                    "head_group.wgsl",
                    "key_walk.wgsl",
                    "attend.wgsl",
                    "head_keys.wgsl",
                    "attention_split.wgsl"
                );
                return [kv.source(), body].concat();
            }
            Kernel::AttentionSplitLanes(_, kv, ..) => {
                let body = wgsl!(
                    "step.wgsl",
                    "key_range.wgsl",
                    "check_tokens.wgsl",
                    "split_params.wgsl",
                    "head_group.wgsl",
                    "lanes_sum.wgsl",
                    "attention_split_lanes.wgsl"
                );
                return [kv.source(), body].concat();
            }
            Kernel::AttentionMerge => wgsl!("reduce.wgsl", "attention_merge.wgsl"),
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
            Kernel::MatmulId => wgsl!("expert_items.wgsl", "tile_x_rows.wgsl", "matmul_id.wgsl"),
            Kernel::MatmulGrouped => {
                wgsl!("step.wgsl", "tile_x_rows.wgsl", "matmul_grouped.wgsl")
            }
            Kernel::MoeCombine => wgsl!("step.wgsl", "moe_combine.wgsl"),
            Kernel::TokenLogProb => wgsl!("step.wgsl", "reduce.wgsl", "token_log_prob.wgsl"),
            Kernel::Softcap => wgsl!("step.wgsl", "softcap.wgsl"),
            Kernel::LastRow => wgsl!("step.wgsl", "last_row.wgsl"),
            Kernel::ArgmaxParts => wgsl!("step.wgsl", "argmax_reduce.wgsl", "argmax_parts.wgsl"),
            Kernel::Argmax => wgsl!("step.wgsl", "argmax_reduce.wgsl", "argmax.wgsl"),
            Kernel::Penalize => wgsl!("pick.wgsl", "penalize.wgsl"),
            Kernel::LogSumExp => wgsl!("reduce.wgsl", "log_sum_exp.wgsl"),
            Kernel::TopK => wgsl!("pick.wgsl", "top_k.wgsl"),
            Kernel::Draw => wgsl!("reduce.wgsl", "draw.wgsl"),
            Kernel::Choose => wgsl!("choose.wgsl"),
            Kernel::MlaKv(kv) => {
                let body = wgsl!("step.wgsl", "rope.wgsl", "reduce.wgsl", "mla_kv.wgsl");
                return [kv.source(), body].concat();
            }
            Kernel::MlaAttention(kv) => {
                let body = wgsl!(
                    "step.wgsl",
                    "key_range.wgsl",
                    "rope.wgsl",
                    "head_group.wgsl",
                    "key_walk.wgsl",
                    "attend.wgsl",
                    "mla_bindings.wgsl",
                    "mla_attention.wgsl"
                );
                return [kv.source(), body].concat();
            }
            Kernel::MlaAttentionCoop(_, _, kv, _, _) => {
                let body = wgsl!(
                    "step.wgsl",
                    "key_range.wgsl",
                    "key_walk.wgsl",
                    "key_union.wgsl",
                    "rope.wgsl",
                    "tile_weights.wgsl",
                    "mla_bindings.wgsl",
                    "mla_attention_coop.wgsl"
                );
                return [kv.source(), body].concat();
            }
            Kernel::DeltaConv => wgsl!("step.wgsl", "delta_conv.wgsl"),
            Kernel::DeltaNet => {
                wgsl!(
                    "step.wgsl",
                    "reduce.wgsl",
                    "delta_rule.wgsl",
                    "delta_inputs_rows.wgsl",
                    "delta_net.wgsl"
                )
            }
            Kernel::DeltaNetConv => {
                wgsl!(
                    "step.wgsl",
                    "reduce.wgsl",
                    "delta_rule.wgsl",
                    "delta_inputs_conv.wgsl",
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
            // A chunk's attention: the forms share their bindings and how a query's keys are
            // found.
            Kernel::AttentionTiled(_, kv)
            | Kernel::AttentionRows(_, kv, _)
            | Kernel::AttentionCoop(_, kv, _, _) => {
                let shared = wgsl!(
                    "step.wgsl",
                    "key_range.wgsl",
                    "key_walk.wgsl",
                    "key_union.wgsl",
                    "attention_params.wgsl",
                    "attention_chunk.wgsl"
                );
                let body = match self {
                    Kernel::AttentionTiled(..) => wgsl!("attention_tiled.wgsl"),
                    Kernel::AttentionRows(..) => wgsl!("lanes_sum.wgsl", "attention_rows.wgsl"),
                    _ => wgsl!("tile_weights.wgsl", "attention_coop.wgsl"),
                };
                return [kv.source(), shared, body].concat();
            }
            Kernel::PerLayerInputs => wgsl!("step.wgsl", "reduce.wgsl", "per_layer_inputs.wgsl"),
        };
        body.to_string()
    }
}

/// The WGSL that defines `BLOCK_LEN`, `BLOCK_BYTES` and `dequant32` for a type, and its split into
/// parts for shaders/row_dot_parts.wgsl: where `wide` (`MatvecKernel::wide`, a type with that form:
/// `has_wide_form`), 8 threads a block, each loading a vec4 of it.
pub(super) fn dequant_source(ty: GgmlType, wide: bool) -> &'static str {
    match (ty, wide) {
        (GgmlType::F16, true) => wgsl!("dequant/f16.wgsl", "dequant/halves_wide.wgsl"),
        (GgmlType::BF16, true) => wgsl!("dequant/bf16.wgsl", "dequant/halves_wide.wgsl"),
        (GgmlType::Q4_K, true) => wgsl!("dequant/q4_k.wgsl", "dequant/q4_k_wide.wgsl"),
        (GgmlType::Q5_K, true) => wgsl!("dequant/q5_k.wgsl", "dequant/q5_k_wide.wgsl"),
        (GgmlType::Q6_K, true) => wgsl!("dequant/q6_k.wgsl", "dequant/q6_k_wide.wgsl"),
        (GgmlType::Q4_0, true) => wgsl!("dequant/q4_0.wgsl", "dequant/q4_0_wide.wgsl"),
        (GgmlType::Q4_1, true) => wgsl!("dequant/q4_1.wgsl", "dequant/q4_1_wide.wgsl"),
        (GgmlType::Q5_1, true) => wgsl!("dequant/q5_1.wgsl", "dequant/q5_1_wide.wgsl"),
        (GgmlType::Q5_0, true) => wgsl!("dequant/q5_0.wgsl", "dequant/q5_0_wide.wgsl"),
        (GgmlType::Q8_0, true) => wgsl!("dequant/q8_0.wgsl", "dequant/q8_0_wide.wgsl"),
        (GgmlType::MXFP4, true) => wgsl!("dequant/mxfp4.wgsl", "dequant/mxfp4_wide.wgsl"),
        _ => dequant_narrow(ty),
    }
}

fn dequant_narrow(ty: GgmlType) -> &'static str {
    match ty {
        GgmlType::F32 => wgsl!(
            "dequant/f32.wgsl",
            "dequant/parts32.wgsl",
            "dequant/f32_parts.wgsl"
        ),
        GgmlType::F16 => wgsl!(
            "dequant/f16.wgsl",
            "dequant/parts32.wgsl",
            "dequant/halves_parts.wgsl"
        ),
        GgmlType::BF16 => wgsl!(
            "dequant/bf16.wgsl",
            "dequant/parts32.wgsl",
            "dequant/halves_parts.wgsl"
        ),
        GgmlType::Q4_0 => wgsl!(
            "dequant/q4_0.wgsl",
            "dequant/parts32.wgsl",
            "dequant/q4_0_parts.wgsl"
        ),
        GgmlType::Q4_1 => wgsl!(
            "dequant/q4_1.wgsl",
            "dequant/parts32.wgsl",
            "dequant/q4_1_parts.wgsl"
        ),
        GgmlType::Q5_0 => wgsl!(
            "dequant/q5_0.wgsl",
            "dequant/parts32.wgsl",
            "dequant/q5_0_parts.wgsl"
        ),
        GgmlType::Q5_1 => wgsl!(
            "dequant/q5_1.wgsl",
            "dequant/parts32.wgsl",
            "dequant/q5_1_parts.wgsl"
        ),
        GgmlType::Q8_0 => wgsl!(
            "dequant/q8_0.wgsl",
            "dequant/parts32.wgsl",
            "dequant/q8_0_parts.wgsl"
        ),
        GgmlType::Q4_K => wgsl!("dequant/q4_k.wgsl", "dequant/q4_k_parts.wgsl"),
        GgmlType::Q5_K => wgsl!("dequant/q5_k.wgsl", "dequant/q5_k_parts.wgsl"),
        GgmlType::Q6_K => wgsl!("dequant/q6_k.wgsl", "dequant/q6_k_parts.wgsl"),
        GgmlType::MXFP4 => wgsl!(
            "dequant/mxfp4.wgsl",
            "dequant/parts32.wgsl",
            "dequant/mxfp4_parts.wgsl"
        ),
    }
}

/// Whether the type's dequant file has a block form (`block_at`, `block_dequant32`) for
/// shaders/row_dot_blocks.wgsl: the K-quants, whose headers are worth decoding once per block.
pub fn has_block_form(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K)
}

/// A 32-weight type's wide form on 8-bit x (shaders/dequant_q8/), after what those forms share.
macro_rules! wide32_q8 {
    ($file:literal) => {
        concat!(
            include_str!("../../shaders/dequant_q8/block32_wide.wgsl"),
            include_str!(concat!("../../shaders/dequant_q8/", $file))
        )
    };
}

/// The WGSL of a type's products on 8-bit x (shaders/dequant_q8/: `x8_place`, `block_part_int8`) for
/// shaders/row_dot_q8.wgsl, after its dequant file: the types whose quants are small integers under a
/// scale per 16 or 32 weights (MXFP4's codes as their doubled values), which integer dot products
/// take as they are.
pub(super) fn q8_source(ty: GgmlType, wide: bool) -> Option<&'static str> {
    Some(match (ty, wide) {
        (GgmlType::Q4_K, true) => wgsl!("dequant_q8/k_quants.wgsl", "dequant_q8/q4_k_wide.wgsl"),
        (GgmlType::Q5_K, true) => wgsl!("dequant_q8/k_quants.wgsl", "dequant_q8/q5_k_wide.wgsl"),
        (GgmlType::Q6_K, true) => wgsl!("dequant_q8/q6_k_wide.wgsl"),
        (GgmlType::Q4_0, true) => wide32_q8!("q4_0_wide.wgsl"),
        (GgmlType::Q5_0, true) => wide32_q8!("q5_0_wide.wgsl"),
        (GgmlType::Q4_1, true) => wide32_q8!("q4_1_wide.wgsl"),
        (GgmlType::Q5_1, true) => wide32_q8!("q5_1_wide.wgsl"),
        (GgmlType::Q8_0, true) => wide32_q8!("q8_0_wide.wgsl"),
        (GgmlType::MXFP4, true) => wide32_q8!("mxfp4_wide.wgsl"),
        (ty, _) => return q8_narrow(ty),
    })
}

fn q8_narrow(ty: GgmlType) -> Option<&'static str> {
    Some(match ty {
        GgmlType::Q4_0 => wgsl!("dequant_q8/blocks32.wgsl", "dequant_q8/q4_0.wgsl"),
        GgmlType::Q4_1 => wgsl!("dequant_q8/blocks32.wgsl", "dequant_q8/q4_1.wgsl"),
        GgmlType::Q5_0 => wgsl!("dequant_q8/blocks32.wgsl", "dequant_q8/q5_0.wgsl"),
        GgmlType::Q5_1 => wgsl!("dequant_q8/blocks32.wgsl", "dequant_q8/q5_1.wgsl"),
        GgmlType::Q8_0 => wgsl!("dequant_q8/blocks32.wgsl", "dequant_q8/q8_0.wgsl"),
        GgmlType::MXFP4 => wgsl!("dequant_q8/blocks32.wgsl", "dequant_q8/mxfp4.wgsl"),
        GgmlType::Q4_K => wgsl!("dequant_q8/k_quants.wgsl", "dequant_q8/q4_k.wgsl"),
        GgmlType::Q5_K => wgsl!("dequant_q8/k_quants.wgsl", "dequant_q8/q5_k.wgsl"),
        GgmlType::Q6_K => wgsl!("dequant_q8/q6_k.wgsl"),
        _ => return None,
    })
}

/// Whether a type has products on 8-bit x (`q8_source`).
pub fn has_int8_form(ty: GgmlType) -> bool {
    q8_source(ty, false).is_some()
}

/// The threads that share one of the type's blocks in shaders/row_dot_parts.wgsl (its dequant file's
/// `PARTS`), and the weights a block holds there: 16 threads a 256-weight K-quant block, 4 a block of
/// 32 weights for the rest (the float types' 32-weight runs included); where `wide` (a type with that
/// form: `has_wide_form`), 8 threads a K-quant block, 1 a quantized 32-weight block, 2 an F16 or
/// BF16 run.
pub fn block_parts(ty: GgmlType, wide: bool) -> (u32, u32) {
    match (ty, wide && has_wide_form(ty)) {
        (GgmlType::F16 | GgmlType::BF16, true) => (2, 32),
        (GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K, true) => (8, 256),
        (_, true) => (1, 32),
        _ if has_block_form(ty) => (16, 256),
        _ => (4, 32),
    }
}

/// Whether the type's blocks may be split into wide parts (`MatvecKernel::wide`), each thread
/// loading vec4s of its block: every quantized type's quants lie on 16-byte bounds (Q4_K's and
/// Q5_K's blocks of 144 and 176 bytes as they are, the others regrouped: src/gpu/regroup.rs), as
/// F16's and BF16's runs of 32 do. F32's few small matrices (routers) are left as they are, which
/// keeps the subgroup check's F32 candidates (`ops::matvec::subgroup_sums_work`, run as a model
/// loads) as few as they were.
pub fn has_wide_form(ty: GgmlType) -> bool {
    ty != GgmlType::F32
}

//! The attention's projection and what follows it, in one pass: q, k and v = W x (one stacked
//! matrix), q and k rotated by RoPE at each token's position, q into its row and k and v into the
//! cache at that position (the pair kernels ending in shaders/store_rope_kv.wgsl).

use super::matvec::Input;
use super::rope::{Rope, RopeParams};
use crate::gpu::{KvType, Plan, Stacked, Store, TensorPart};

/// The heads the projection makes.
#[derive(Clone, Copy, Debug)]
pub struct Heads {
    pub n_head: u32,
    pub n_kv_head: u32,
    pub head_dim: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rope: RopeParams,
    rows: u32,
    cols: u32,
    row_bytes: u32,
    out_offset: u32,
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    has_bias: u32,
}

/// Where the projection's results go.
pub struct RopeBuffers<'a> {
    /// (batch, n_head * head_dim): each token's q, rotated.
    pub q: &'a wgpu::Buffer,
    /// (n_ctx, n_kv_head, head_dim)
    pub k_cache: &'a wgpu::Buffer,
    pub v_cache: &'a wgpu::Buffer,
    /// How the cache holds its values.
    pub cache_type: KvType,
    /// (n_rot / 2) each pair's frequency (`Rope::freqs_buffer`).
    pub freqs: &'a wgpu::Buffer,
}

/// Adds the projection of x (batch, cols) through `qkv` (q's, k's and v's rows stacked), plus `bias`
/// (q's, k's and v's, stacked alike) where the model has one, rotated and cached, for each token of
/// the run. x's norm, where it has one, is done once for the three (`Input::for_pairs`).
pub fn push(
    plan: &mut Plan,
    (qkv, bias): (&Stacked, Option<&wgpu::Buffer>),
    x: Input,
    rope: &Rope,
    heads: Heads,
    b: &RopeBuffers,
) {
    // The store rotates the pairs of rows (2i, 2i+1). A NeoX-ordered model has its q and k rows
    // reordered at load so that the dimensions it rotates together sit side by side.
    assert!(!rope.neox, "the fused projection rotates adjacent pairs");
    // What a model lacks, the step buffer stands in for: the binding must be there, unread.
    let step = plan.step.clone();
    let bias_or_step = bias.unwrap_or(&step);
    let outputs = [b.q, b.k_cache, b.v_cache, b.freqs, bias_or_step];
    let x = x.for_pairs(plan);
    for (w, offset) in &qkv.tensors {
        assert!(offset % 2 == 0, "{}: its rows start inside a pair", w.name);
        let params = |part: &TensorPart| {
            let p = Params {
                rope: rope.params(),
                rows: part.rows,
                cols: w.row_len,
                row_bytes: w.row_bytes,
                out_offset: offset + part.first_row,
                n_head: heads.n_head,
                n_kv_head: heads.n_kv_head,
                head_dim: heads.head_dim,
                has_bias: bias.is_some() as u32,
            };
            super::params(&p).to_vec()
        };
        let store = Store::RopeKv(b.cache_type);
        super::matvec::push_pairs(plan, w, x, store, &outputs, params);
    }
}

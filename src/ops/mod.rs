//! One file per op family, beside its shader: the dispatch it adds to a plan and a plain CPU reference.

pub mod add_position;
pub mod allowed;
pub mod argmax;
pub mod attention;
pub mod attention_check;
pub mod avg_pool;
pub mod bias;
pub mod delta_net;
pub mod draw;
pub mod embed;
pub mod glu;
pub mod head_norm_rope_kv;
pub mod last_row;
pub mod layer_norm;
pub mod log_prob;
pub mod matvec;
pub mod matvec_id;
pub mod mla;
pub mod moe;
pub mod moe_route;
pub mod per_layer_inputs;
pub mod rms_norm;
pub mod rope;
pub mod rope_kv;
pub mod sigmoid_gate;
pub mod softcap;
pub mod top_k;
pub mod vision_grid;

/// Bytes of a uniform parameter block.
pub(crate) fn params<T: bytemuck::Pod>(p: &T) -> &[u8] {
    bytemuck::bytes_of(p)
}

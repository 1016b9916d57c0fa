// The parameters of one token's attention split over its keys (attention_split.wgsl,
// attention_split_lanes.wgsl; ops::attention's `SplitParams`).

struct Params {
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32, // a multiple of 4
    scale: f32,
    n_split: u32,
    window: u32,   // keys the query sees, its own included; 0: all before it
    softcap: f32,  // scores soft-capped at this (Gemma 2); 0: not
}

// The parameters of attention.wgsl and attention_tiled.wgsl (ops::attention's `Params`): what
// the heads are and how a query scores and sees keys.

struct Params {
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32, // a multiple of 4
    scale: f32,
    window: u32,   // keys a query sees, its own included; 0: all before it
    softcap: f32,  // scores soft-capped at this (Gemma 2); 0: not
    sinks: u32,    // 1: SINK holds each head's sink logit
    causal: u32,   // 0: bidirectional
    // Where causal, a token of an id from this one on (a row given in place of an embedding: an
    // image's token) sees its whole segment, later tokens too (Gemma 3's images attend both ways).
    both_ways_from: u32,
}

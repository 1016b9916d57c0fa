// The parameters of attention.wgsl, attention_tiled.wgsl and attention_rows.wgsl (ops::attention's
// `Params`): what the heads are and how a query scores and sees keys; and a head's sink, which each
// of them applies the same way (their SINK binding).

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
    // 1: the run is a step's (a token of each sequence, or a speculative check's tokens), a
    // workgroup a token, that of a sequence's first taking up to TQ of its tokens (attention.wgsl,
    // check_tokens.wgsl); 0: a chunk's, TQ tokens a workgroup.
    step: u32,
}

// A query's softmax over its keys (their max m and sum of exponentials l) with head h's sink taking
// its share of the weight: the max and the sum take the sink's logit too. Returns the rescale of what
// was summed (the output too) and the new sum; (1, l) where the heads have no sinks.
fn with_sink(h: u32, m: f32, l: f32) -> vec2<f32> {
    if (P.sinks == 0u) {
        return vec2<f32>(1.0, l);
    }
    let m_sink = max(m, SINK[h]);
    let rescale = exp(m - m_sink);
    return vec2<f32>(rescale, l * rescale + exp(SINK[h] - m_sink));
}

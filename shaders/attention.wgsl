// Attention of each query of the run over the cache up to its own position (causal; within the last
// `window` positions on a sliding-window layer), or over every position of its sequence in the run
// (bidirectional, an embedding model's encoder; within window / 2 positions either side on a
// sliding-window layer), grouped-query: one workgroup per (group of up to 4 q heads that read one kv
// head, up to TQ consecutive tokens of the run: a chunk's, or in a step a sequence's, a speculative
// check's, taken by the workgroup of its first token, check_tokens.wgsl); q head h reads kv head
// h / (n_head / n_kv_head). A query sees its own sequence's rows only (step.wgsl). No score row is
// stored (attend.wgsl's online softmax), so a prompt's chunk needs no more memory than one token; a
// key and a value read serve the group's heads of its tokens.
// Needs kv_f32.wgsl or kv_f16.wgsl, step.wgsl, key_range.wgsl, check_tokens.wgsl,
// attention_params.wgsl, head_group.wgsl, key_walk.wgsl, attend.wgsl and head_keys.wgsl. A head may
// have a sink (gpt-oss): a learned logit that takes its share of the softmax and adds no value.

@group(0) @binding(0) var<storage, read> Q: array<vec4<f32>>;       // (batch, n_head, head_dim / 4)
@group(0) @binding(1) var<storage, read> KC: array<Kv4>;            // (n_ctx, n_kv_head, head_dim / 4)
@group(0) @binding(2) var<storage, read> VC: array<Kv2>;            // (n_ctx, n_kv_head, head_dim / 2)
@group(0) @binding(3) var<storage, read_write> O: array<f32>;       // (batch, n_head, head_dim)
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<storage, read> SINK: array<f32>;          // (n_head), where P.sinks
@group(0) @binding(6) var<uniform> P: Params;

override WG: u32 = 64u;

var<private> q_first: array<u32, TQ>; // the vec4 where each query's group's first head starts

fn query(q: u32, g: u32, i: u32) -> vec4<f32> {
    return Q[q_first[q] + g * (P.head_dim / 4u) + i];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let group = head_group(wg.x, P.n_head / P.n_kv_head);
    var token0 = wg.y * TQ;
    var taken = 0u;
    if (P.step != 0u) {
        token0 = wg.y;
        taken = tokens_taken(token0);
    } else if (token0 < step.n_tokens) {
        taken = min(TQ, step.n_tokens - token0);
    }
    if (taken == 0u) {
        return;
    }
    // Tokens past those taken take the last one's query and keys; they weigh nothing and are not
    // stored.
    var ranges: array<vec2<u32>, TQ>;
    for (var q = 0u; q < TQ; q++) {
        let token = token0 + min(q, taken - 1u);
        q_first[q] = (token * P.n_head + group.x) * (P.head_dim / 4u);
        ranges[q] = key_range(token, P.causal != 0u, P.window, P.both_ways_from);
    }
    let r = attend(head_keys(group.x), group.y, ranges, taken, t);
    for (var q = 0u; q < taken; q++) {
        let token = token0 + q;
        for (var g = 0u; g < group.y; g++) {
            let h = group.x + g;
            let sunk = with_sink(h, r.m[q][g], r.l[q][g]);
            let o = (token * P.n_head + h) * P.head_dim;
            for (var i = 0u; i < 4u; i++) {
                let dim = t + i * WG;
                if (dim < P.head_dim) {
                    O[o + dim] = r.acc[q][i][g] * sunk.x / sunk.y;
                }
            }
        }
    }
}

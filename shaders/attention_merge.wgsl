// Combines the splits of each head of each of a step's tokens (attention_split.wgsl,
// attention_split_lanes.wgsl, mla_attention.wgsl): their sums rescaled to the largest max, added,
// divided by the total weight (which a head's sink logit, where it has one, joins). Workgroup (head,
// token). The threads share out the splits to find the largest max and the total weight, and each
// split's factor exp(max - largest) is worked out once, into workgroup memory; then a thread per
// output dim adds the splits' sums. (A thread walking every split's max and weight for each pass on
// its own took 11 us a merge on an H200, a load waiting on the one before it.) Needs reduce.wgsl.

struct Params {
    n_head: u32,
    head_dim: u32,
    n_split: u32,
    sinks: u32, // 1: SINK holds each head's sink logit
}

@group(0) @binding(0) var<storage, read> parts: array<f32>;         // (tokens, n_head, n_split, head_dim + 2)
@group(0) @binding(1) var<storage, read_write> O: array<f32>;       // (tokens, n_head, head_dim)
@group(0) @binding(2) var<storage, read> SINK: array<f32>;          // (n_head), where P.sinks
@group(0) @binding(3) var<uniform> P: Params;

override WG: u32 = 64u;

// Each split's factor; 0 for a split that saw no key. (`attention::MERGED_SPLITS_MAX` splits.)
var<workgroup> factors: array<f32, 256>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let h = wg.x;
    let row = wg.y * P.n_head + h; // the token's head among the run's
    let width = P.head_dim + 2u;
    let first = row * P.n_split * width;
    // A split's max is at head_dim, its weight (sum of exp(score - max)) after it; one that saw no
    // key has weight 0 and a max of nothing.
    var m = -3.0e38;
    for (var s = t; s < P.n_split; s += WG) {
        let at = first + s * width;
        if (parts[at + P.head_dim + 1u] > 0.0) {
            m = max(m, parts[at + P.head_dim]);
        }
    }
    if (P.sinks != 0u) {
        m = max(m, SINK[h]);
    }
    m = reduce_max(t, m);
    var l = 0.0;
    for (var s = t; s < P.n_split; s += WG) {
        let at = first + s * width;
        l += parts[at + P.head_dim + 1u] * exp(parts[at + P.head_dim] - m);
    }
    l = reduce_sum(t, l);
    if (P.sinks != 0u) {
        l += exp(SINK[h] - m);
    }
    for (var s = t; s < P.n_split; s += WG) {
        let at = first + s * width;
        var f = 0.0;
        if (parts[at + P.head_dim + 1u] > 0.0) {
            f = exp(parts[at + P.head_dim] - m);
        }
        factors[s] = f;
    }
    workgroupBarrier();
    for (var dim = t; dim < P.head_dim; dim += WG) {
        var acc = 0.0;
        for (var s = 0u; s < P.n_split; s++) {
            let f = factors[s];
            if (f != 0.0) {
                acc += parts[first + s * width + dim] * f;
            }
        }
        O[row * P.head_dim + dim] = acc / l;
    }
}

// out[P.at] = log(sum(exp(logits))) over one row of n logits (after the sampler's penalties): a logit less
// this is its token's log-probability, so a step that reports log-probabilities reads back one more
// number, not the row. One workgroup. Needs reduce.wgsl.

struct Params {
    n: u32,
    at: u32,
    row: u32, // where the row starts in `logits`
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) t: u32) {
    var top = -3.0e38;
    for (var i = t; i < P.n; i += WG) {
        top = max(top, logits[P.row + i]);
    }
    top = reduce_max(t, top);
    var sum = 0.0;
    for (var i = t; i < P.n; i += WG) {
        sum += exp(logits[P.row + i] - top);
    }
    sum = reduce_sum(t, sum);
    if (t == 0u) {
        out[P.at] = top + log(sum);
    }
}

// The router of a mixture-of-experts layer: from the router's logits, each expert's probability
// (softmax, or sigmoid), the top n_used by probability plus an optional selection bias (the bias picks,
// it does not weigh), their weights (optionally normalized to sum 1, then scaled). Writes the chosen
// ids, then their weights as f32 bits, for matvec_id.wgsl. Tiny work: one thread per token of the
// run. Needs step.wgsl.

const MAX_EXPERTS: u32 = 256u;

struct Params {
    n_expert: u32,
    n_used: u32,
    sigmoid: u32,    // 1: sigmoid gating; 0: softmax
    normalize: u32,  // 1: weights sum to 1 before scaling
    scale: f32,
    has_bias: u32,
    logits_stride: u32, // values per row of logits: n_expert, and any the row carries after them
    pad: u32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;       // (batch, logits_stride)
@group(0) @binding(1) var<storage, read> bias: array<f32>;         // (n_expert), or unused
@group(0) @binding(2) var<storage, read_write> route: array<u32>;  // (batch, n_used ids, n_used weights)
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 1u;

@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) wg: vec3<u32>) {
    let token = wg.x;
    if (token >= step.n_tokens) {
        return;
    }
    let l0 = token * P.logits_stride;
    let r0 = token * 2u * P.n_used;
    var prob: array<f32, MAX_EXPERTS>;
    var taken: array<bool, MAX_EXPERTS>;
    var top = -3.0e38;
    for (var e = 0u; e < P.n_expert; e++) {
        top = max(top, logits[l0 + e]);
    }
    var sum = 0.0;
    for (var e = 0u; e < P.n_expert; e++) {
        if (P.sigmoid == 1u) {
            prob[e] = 1.0 / (1.0 + exp(-logits[l0 + e]));
        } else {
            prob[e] = exp(logits[l0 + e] - top);
            sum += prob[e];
        }
        taken[e] = false;
    }
    if (P.sigmoid == 0u) {
        for (var e = 0u; e < P.n_expert; e++) {
            prob[e] /= sum;
        }
    }
    var total = 0.0;
    for (var s = 0u; s < P.n_used; s++) {
        var best = 0u;
        var best_score = -3.0e38;
        for (var e = 0u; e < P.n_expert; e++) {
            let score = prob[e] + select(0.0, bias[e], P.has_bias == 1u);
            if (!taken[e] && score > best_score) {
                best = e;
                best_score = score;
            }
        }
        taken[best] = true;
        route[r0 + s] = best;
        total += prob[best];
    }
    let norm = select(1.0, 1.0 / max(total, 6.103515625e-5), P.normalize == 1u);
    for (var s = 0u; s < P.n_used; s++) {
        route[r0 + P.n_used + s] = bitcast<u32>(prob[route[r0 + s]] * norm * P.scale);
    }
}

// The router of a mixture-of-experts layer: from the router's logits (and the router's bias added to
// them, where it has one: gpt-oss's), each expert's probability (softmax, or sigmoid), the top n_used by probability plus an optional selection bias (the bias picks,
// it does not weigh), their weights (optionally normalized to sum 1, then scaled). Writes the chosen
// ids, then their weights as f32 bits, for matvec_id.wgsl. A workgroup per token of the run, its
// threads taking the experts in turn; the probabilities live in workgroup memory (an array per thread
// of 256 values indexed at run time costs some compilers, llvmpipe's among them, most of a step). Ties
// go to the lowest id. Needs step.wgsl.

const MAX_EXPERTS: u32 = 256u;
const MAX_WG: u32 = 64u;
override WG: u32 = 64u; // at most MAX_WG, a power of two

struct Params {
    n_expert: u32,
    n_used: u32,
    sigmoid: u32,    // 1: sigmoid gating; 0: softmax
    normalize: u32,  // 1: weights sum to 1 before scaling
    scale: f32,
    has_bias: u32,
    logits_stride: u32, // values per row of logits: n_expert, and any the row carries after them
    has_logit_bias: u32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;       // (batch, logits_stride)
@group(0) @binding(1) var<storage, read> selection_bias: array<f32>; // (n_expert), or unused
@group(0) @binding(2) var<storage, read_write> route: array<u32>;  // (batch, n_used ids, n_used weights)
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<storage, read> logit_bias: array<f32>;   // (n_expert), or unused
@group(0) @binding(5) var<uniform> P: Params;

var<workgroup> prob: array<f32, MAX_EXPERTS>;
var<workgroup> taken: array<u32, MAX_EXPERTS>;
var<workgroup> best: array<f32, MAX_WG>;
var<workgroup> best_id: array<u32, MAX_WG>;

// The workgroup's sum (or max) of each thread's `v`, in every thread.
fn reduce(lid: u32, v: f32, take_max: bool) -> f32 {
    best[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            best[lid] = select(best[lid] + best[lid + s], max(best[lid], best[lid + s]), take_max);
        }
        workgroupBarrier();
    }
    let r = best[0];
    workgroupBarrier();
    return r;
}

// Expert e's logit in the row that starts at l0, biased where the router is.
fn logit(l0: u32, e: u32) -> f32 {
    return logits[l0 + e] + select(0.0, logit_bias[e], P.has_logit_bias == 1u);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let token = wg.x;
    if (token >= step.n_tokens) {
        return;
    }
    let l0 = token * P.logits_stride;
    let r0 = token * 2u * P.n_used;
    var top = -3.0e38;
    for (var e = lid; e < P.n_expert; e += WG) {
        top = max(top, logit(l0, e));
    }
    top = reduce(lid, top, true);
    var sum = 0.0;
    for (var e = lid; e < P.n_expert; e += WG) {
        let l = logit(l0, e);
        let p = select(exp(l - top), 1.0 / (1.0 + exp(-l)), P.sigmoid == 1u);
        prob[e] = p;
        taken[e] = 0u;
        sum += p;
    }
    sum = reduce(lid, sum, false);
    if (P.sigmoid == 0u) {
        for (var e = lid; e < P.n_expert; e += WG) {
            prob[e] /= sum;
        }
    }
    workgroupBarrier();
    for (var s = 0u; s < P.n_used; s++) {
        var b = MAX_EXPERTS;
        var b_score = -3.0e38;
        for (var e = lid; e < P.n_expert; e += WG) {
            let score = prob[e] + select(0.0, selection_bias[e], P.has_bias == 1u);
            if (taken[e] == 0u && score > b_score) {
                b = e;
                b_score = score;
            }
        }
        best[lid] = b_score;
        best_id[lid] = b;
        workgroupBarrier();
        for (var half = WG / 2u; half > 0u; half >>= 1u) {
            if (lid < half) {
                let o = lid + half;
                if (best[o] > best[lid] || (best[o] == best[lid] && best_id[o] < best_id[lid])) {
                    best[lid] = best[o];
                    best_id[lid] = best_id[o];
                }
            }
            workgroupBarrier();
        }
        if (lid == 0u) {
            taken[best_id[0]] = 1u;
            route[r0 + s] = best_id[0];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        var total = 0.0;
        for (var s = 0u; s < P.n_used; s++) {
            total += prob[route[r0 + s]];
        }
        let norm = select(1.0, 1.0 / max(total, 6.103515625e-5), P.normalize == 1u);
        for (var s = 0u; s < P.n_used; s++) {
            route[r0 + P.n_used + s] = bitcast<u32>(prob[route[r0 + s]] * norm * P.scale);
        }
    }
}

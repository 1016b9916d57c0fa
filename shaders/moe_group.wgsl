// The items of a run (token, slot pairs: token * n_used + slot) listed by the expert they were routed
// to, in token order, for matmul_id.wgsl: counts first, then each expert's list. Tiny work: a thread
// per expert. Needs step.wgsl.

struct Params {
    n_expert: u32,
    n_used: u32,
    max_items: u32, // the length of each list: the plan's batch (a token picks an expert at most once)
}

@group(0) @binding(0) var<storage, read> route: array<u32>;        // (batch, n_used ids, n_used weights)
@group(0) @binding(1) var<storage, read_write> groups: array<u32>; // (n_expert) counts, (n_expert, max_items)
@group(0) @binding(2) var<storage, read> step: Step;
@group(0) @binding(3) var<uniform> P: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) t: u32) {
    for (var e = t; e < P.n_expert; e += WG) {
        var count = 0u;
        for (var token = 0u; token < step.n_tokens; token++) {
            for (var s = 0u; s < P.n_used; s++) {
                if (route[token * 2u * P.n_used + s] == e) {
                    groups[P.n_expert + e * P.max_items + count] = token * P.n_used + s;
                    count++;
                }
            }
        }
        groups[e] = count;
    }
}

// Attention of one token's query split over the sequence (flash-decoding): with a long cache, one
// workgroup per group of heads (attention.wgsl) leaves most of a GPU idle, so workgroup (group, s)
// takes split s of the keys and writes its heads' partial states; attention_merge.wgsl combines the
// splits. One query (TQ = 1). Needs step.wgsl, key_range.wgsl, attend.wgsl and head_keys.wgsl.

struct Params {
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32, // a multiple of 4, at most 4 * WG
    scale: f32,
    n_split: u32,
    window: u32,   // keys the query sees, its own included; 0: all before it
    softcap: f32,  // scores soft-capped at this (Gemma 2); 0: not
}

@group(0) @binding(0) var<storage, read> Q: array<vec4<f32>>;       // (n_head, head_dim / 4)
@group(0) @binding(1) var<storage, read> KC: array<Kv4>;            // (n_ctx, n_kv_head, head_dim / 4)
@group(0) @binding(2) var<storage, read> VC: array<Kv2>;            // (n_ctx, n_kv_head, head_dim / 2)
@group(0) @binding(3) var<storage, read_write> parts: array<f32>;   // (n_head, n_split, head_dim + 2)
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> P: Params;

override WG: u32 = 64u;

var<private> q_first: u32; // the vec4 where the group's first query starts

fn query(q: u32, g: u32, i: u32) -> vec4<f32> {
    return Q[q_first + g * (P.head_dim / 4u) + i];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let group = head_group(wg.x, P.n_head / P.n_kv_head);
    let split = wg.y;
    q_first = group.x * (P.head_dim / 4u);
    let base = step.tokens[0].base;
    let n = cache_row(0u) + 1u;
    let seen = base + first_key(step.tokens[0].pos + 1u, P.window);
    // Whole blocks of WG keys per split, so that few splits are partly filled.
    let per_split = ((n - seen + P.n_split - 1u) / P.n_split + WG - 1u) / WG * WG;
    let first = min(n, seen + split * per_split);
    let end = min(n, first + per_split);
    let r = attend(head_keys(group.x), group.y, array<vec2<u32>, TQ>(vec2<u32>(first, end)), t);
    for (var g = 0u; g < group.y; g++) {
        let out = ((group.x + g) * P.n_split + split) * (P.head_dim + 2u);
        for (var i = 0u; i < 4u; i++) {
            let dim = t + i * WG;
            if (dim < P.head_dim) {
                parts[out + dim] = r.acc[0][i][g];
            }
        }
        if (t == 0u) {
            parts[out + P.head_dim] = r.m[0][g];
            parts[out + P.head_dim + 1u] = r.l[0][g]; // 0 for a split with no keys
        }
    }
}

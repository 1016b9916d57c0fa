// Attention of each of a step's tokens split over its keys (flash-decoding): with a long cache, one
// workgroup per group of heads (attention.wgsl) leaves most of a GPU idle, so workgroup (group,
// token, s) takes split s of the token's keys and writes its heads' partial states;
// attention_merge.wgsl combines the splits. A workgroup takes up to TQ consecutive tokens of one
// sequence (a speculative check's: check_tokens.wgsl), splitting the keys the last of them sees, so
// that each key and value read serves all their queries (each weighing the keys it sees); TQ is 1
// in a plan of one token. Heads of at most 4 * WG dimensions. Needs step.wgsl, key_range.wgsl,
// check_tokens.wgsl, split_params.wgsl, head_group.wgsl, key_walk.wgsl, attend.wgsl and
// head_keys.wgsl.

@group(0) @binding(0) var<storage, read> Q: array<vec4<f32>>;       // (tokens, n_head, head_dim / 4)
@group(0) @binding(1) var<storage, read> KC: array<Kv4>;            // (n_ctx, n_kv_head, head_dim / 4)
@group(0) @binding(2) var<storage, read> VC: array<Kv2>;            // (n_ctx, n_kv_head, head_dim / 2)
@group(0) @binding(3) var<storage, read_write> O: array<f32>;       // (tokens, n_head, n_split, head_dim + 2)
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> P: Params;

override WG: u32 = 64u;

var<private> q_first: array<u32, TQ>; // the vec4 where each query's group's first head starts

fn query(q: u32, g: u32, i: u32) -> vec4<f32> {
    return Q[q_first[q] + g * (P.head_dim / 4u) + i];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let group = head_group(wg.x, P.n_head / P.n_kv_head);
    let split = wg.z;
    let taken = tokens_taken(wg.y);
    if (taken == 0u) {
        return;
    }
    // Token u of those taken is wg.y + u (past them, the last taken, weighing nothing).
    for (var u = 0u; u < TQ; u++) {
        q_first[u] = ((wg.y + min(u, taken - 1u)) * P.n_head + group.x) * (P.head_dim / 4u);
    }
    // Whole blocks of WG keys a split, so that few splits are partly filled; each token weighs the
    // split's keys it sees (none: an empty range).
    let sees = taken_keys(wg.y, taken, P.window);
    let keys = taken_split(sees, taken, split, P.n_split, WG);
    var ranges: array<vec2<u32>, TQ>;
    for (var u = 0u; u < TQ; u++) {
        ranges[u] = vec2<u32>(max(sees[u].x, keys.x), min(sees[u].y, keys.y));
    }
    let r = attend(head_keys(group.x), group.y, ranges, taken, t);
    for (var u = 0u; u < taken; u++) {
        let heads = vec2<u32>((wg.y + u) * P.n_head + group.x, group.y);
        store_split(r, u, heads, split, P.n_split, P.head_dim, t);
    }
}

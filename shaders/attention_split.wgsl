// Attention of each of a step's tokens split over its keys (flash-decoding): with a long cache, one
// workgroup per group of heads (attention.wgsl) leaves most of a GPU idle, so workgroup (group,
// token, s) takes split s of the token's keys and writes its heads' partial states;
// attention_merge.wgsl combines the splits. One query a workgroup (TQ = 1); heads of at most 4 * WG
// dimensions. Needs step.wgsl, key_range.wgsl,
// split_params.wgsl, head_group.wgsl, attend.wgsl and head_keys.wgsl.

@group(0) @binding(0) var<storage, read> Q: array<vec4<f32>>;       // (tokens, n_head, head_dim / 4)
@group(0) @binding(1) var<storage, read> KC: array<Kv4>;            // (n_ctx, n_kv_head, head_dim / 4)
@group(0) @binding(2) var<storage, read> VC: array<Kv2>;            // (n_ctx, n_kv_head, head_dim / 2)
@group(0) @binding(3) var<storage, read_write> O: array<f32>;       // (tokens, n_head, n_split, head_dim + 2)
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
    let token = wg.y;
    let split = wg.z;
    let first_head = token * P.n_head + group.x;
    q_first = first_head * (P.head_dim / 4u);
    // Whole blocks of WG keys per split, so that few splits are partly filled.
    let keys = split_range(token, split, P.n_split, P.window, WG);
    let r = attend(head_keys(group.x), group.y, array<vec2<u32>, TQ>(keys), t);
    store_split(r, vec2<u32>(first_head, group.y), split, P.n_split, P.head_dim, t);
}

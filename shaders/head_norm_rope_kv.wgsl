// What follows the attention projection in models that RMS-norm q and k per head (Gemma 3, Qwen 3):
// each head of q and k normed over its head_dim and scaled by its norm weights, then rotated at the
// token's position, q into the token's row of Q and k into the cache; v's heads copied into the cache,
// or in Gemma 4 normed first (by the third row of weights, its ones). One workgroup per (head, token),
// heads counted over q's, k's and v's (q's alone in a layer that reads another's cache). Pairs (2i, 2i+1) rotate
// together: a NeoX-ordered model's q and k rows, and its norm weights, were reordered at load so.
// Needs kv_f32.wgsl or kv_f16.wgsl, step.wgsl, rope.wgsl and reduce.wgsl.

struct Params {
    rope: Rope,
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,     // even, at most 2 * WG * PAIRS
    eps: f32,
    row_len: u32,      // values per token row of QKV
    k_at: u32,         // where k's heads start in a row (v's follow): after q, and in gated
                       // attention after the output gate's values
    norm_v: u32,       // 1: v's heads are normed too
}

@group(0) @binding(0) var<storage, read> QKV: array<f32>;          // (batch, row_len)
@group(0) @binding(1) var<storage, read> norms: array<f32>;        // (2 or 3, head_dim): q's, k's (v's)
@group(0) @binding(2) var<storage, read_write> Q: array<f32>;      // (batch, n_head * head_dim)
@group(0) @binding(3) var<storage, read_write> KC: array<Kv2>;     // (n_ctx, n_kv_head, head_dim / 2)
@group(0) @binding(4) var<storage, read_write> VC: array<Kv2>;     // (n_ctx, n_kv_head, head_dim / 2)
@group(0) @binding(5) var<storage, read> freqs: array<f32>;        // (n_rot / 2) each pair's frequency
@group(0) @binding(6) var<storage, read> step: Step;
@group(0) @binding(7) var<uniform> P: Params;

override WG: u32 = 64u;
const PAIRS: u32 = 4u; // pairs per thread: heads of up to 512 dimensions

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let head = wg.x;
    let token = wg.y;
    if (token >= step.n_tokens) {
        return;
    }
    let crow = cache_row(token);
    let hd = P.head_dim;
    let q_dim = P.n_head * hd;
    let kv_dim = P.n_kv_head * hd;
    let is_q = head < P.n_head;
    let is_v = head >= P.n_head + P.n_kv_head;
    let row = token * P.row_len + select(P.k_at + (head - P.n_head) * hd, head * hd, is_q);
    if (is_v && P.norm_v == 0u) { // a v head: as it is
        let c = crow * kv_dim + (head - P.n_head - P.n_kv_head) * hd;
        for (var d = 2u * t; d < hd; d += 2u * WG) {
            VC[(c + d) / 2u] = to_kv2(vec2<f32>(QKV[row + d], QKV[row + d + 1u]));
        }
        return;
    }
    var x: array<vec2<f32>, PAIRS>;
    var sum = 0.0;
    for (var j = 0u; j < PAIRS; j++) {
        let i = t + j * WG;
        if (i < hd / 2u) {
            x[j] = vec2<f32>(QKV[row + 2u * i], QKV[row + 2u * i + 1u]);
            sum += dot(x[j], x[j]);
        }
    }
    let scale = inverseSqrt(reduce_sum(t, sum) / f32(hd) + P.eps);
    let w = select(select(hd, 2u * hd, is_v), 0u, is_q);
    for (var j = 0u; j < PAIRS; j++) {
        let i = t + j * WG;
        if (i >= hd / 2u) {
            continue;
        }
        let a = x[j].x * scale * norms[w + 2u * i];
        let b = x[j].y * scale * norms[w + 2u * i + 1u];
        var r = vec2<f32>(a, b);
        if (i < P.rope.n_rot / 2u && !is_v) {
            let cs = rope_cos_sin(P.rope, token_turn(token, rope_axis(P.rope, i)), i, freqs[i]);
            r = vec2<f32>(a * cs.x - b * cs.y, a * cs.y + b * cs.x);
        }
        let o = select(crow * kv_dim + (head - P.n_head) * hd, token * q_dim + head * hd, is_q) + 2u * i;
        if (is_q) {
            Q[o] = r.x;
            Q[o + 1u] = r.y;
        } else if (is_v) {
            VC[(o - P.n_kv_head * hd) / 2u] = to_kv2(r);
        } else {
            KC[o / 2u] = to_kv2(r);
        }
    }
}

// RoPE on q (in place) and k at each token's position, then k and v into the cache at that position.
// q, k and v sit side by side in each token's row of QKV (one stacked matrix made them). One thread
// per pair of dimensions of every q and k head, one row of threads per token of the run; dimensions
// past n_rot pass through. Needs step.wgsl and rope.wgsl.

struct Params {
    rope: Rope,
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    has_factors: u32,  // 1: divide each frequency by rope_freqs[i]
}

@group(0) @binding(0) var<storage, read_write> QKV: array<f32>;     // (batch, (n_head + 2 n_kv_head) head_dim)
@group(0) @binding(1) var<storage, read_write> KC: array<f32>;      // (n_ctx, n_kv_head, head_dim)
@group(0) @binding(2) var<storage, read_write> VC: array<f32>;      // (n_ctx, n_kv_head, head_dim)
@group(0) @binding(3) var<storage, read> factors: array<f32>;       // (n_rot / 2), or one unused value
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let half = P.head_dim / 2u;
    let head = gid.x / half;
    let i = gid.x % half;
    let t = gid.y;
    if (head >= P.n_head + P.n_kv_head || t >= step.n_tokens) {
        return;
    }
    let pos = step.pos + t;
    let kv_dim = P.n_kv_head * P.head_dim;
    let q_dim = P.n_head * P.head_dim;
    let row = t * (q_dim + 2u * kv_dim);
    var j = vec2<u32>(2u * i, 2u * i + 1u);
    var cs = vec2<f32>(1.0, 0.0);
    if (i < P.rope.n_rot / 2u) {
        j = rope_pair(P.rope, i);
        cs = rope_cos_sin(P.rope, pos, i, select(1.0, factors[i], P.has_factors == 1u));
    }
    if (head < P.n_head) {
        let b = row + head * P.head_dim;
        let x0 = QKV[b + j.x];
        let x1 = QKV[b + j.y];
        QKV[b + j.x] = x0 * cs.x - x1 * cs.y;
        QKV[b + j.y] = x0 * cs.y + x1 * cs.x;
        return;
    }
    let kv_head = (head - P.n_head) * P.head_dim;
    let k = row + q_dim + kv_head;
    let v = k + kv_dim;
    let cache = pos * kv_dim + kv_head;
    let x0 = QKV[k + j.x];
    let x1 = QKV[k + j.y];
    KC[cache + j.x] = x0 * cs.x - x1 * cs.y;
    KC[cache + j.y] = x0 * cs.y + x1 * cs.x;
    VC[cache + j.x] = QKV[v + j.x];
    VC[cache + j.y] = QKV[v + j.y];
}

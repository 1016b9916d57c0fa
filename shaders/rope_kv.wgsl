// RoPE on q (in place) and k at the step's position, then k and v into the cache at that position.
// One thread per pair of dimensions of every q and k head; dimensions past n_rot pass through.
// Needs rope.wgsl.

struct Params {
    rope: Rope,
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    has_factors: u32,  // 1: divide each frequency by rope_freqs[i]
}

struct Step {
    token: u32,
    pos: u32,
}

@group(0) @binding(0) var<storage, read_write> Q: array<f32>;       // (n_head, head_dim)
@group(0) @binding(1) var<storage, read> K: array<f32>;             // (n_kv_head, head_dim)
@group(0) @binding(2) var<storage, read> V: array<f32>;             // (n_kv_head, head_dim)
@group(0) @binding(3) var<storage, read_write> KC: array<f32>;      // (n_ctx, n_kv_head, head_dim)
@group(0) @binding(4) var<storage, read_write> VC: array<f32>;      // (n_ctx, n_kv_head, head_dim)
@group(0) @binding(5) var<storage, read> factors: array<f32>;       // (n_rot / 2), or one unused value
@group(0) @binding(6) var<storage, read> step: Step;
@group(0) @binding(7) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let half = P.head_dim / 2u;
    let head = gid.x / half;
    let i = gid.x % half;
    if (head >= P.n_head + P.n_kv_head) {
        return;
    }
    var j = vec2<u32>(2u * i, 2u * i + 1u);
    var cs = vec2<f32>(1.0, 0.0);
    if (i < P.rope.n_rot / 2u) {
        j = rope_pair(P.rope, i);
        cs = rope_cos_sin(P.rope, step.pos, i, select(1.0, factors[i], P.has_factors == 1u));
    }
    if (head < P.n_head) {
        let b = head * P.head_dim;
        let x0 = Q[b + j.x];
        let x1 = Q[b + j.y];
        Q[b + j.x] = x0 * cs.x - x1 * cs.y;
        Q[b + j.y] = x0 * cs.y + x1 * cs.x;
        return;
    }
    let kv_dim = P.n_kv_head * P.head_dim;
    let b = (head - P.n_head) * P.head_dim;
    let cache = step.pos * kv_dim + b;
    let x0 = K[b + j.x];
    let x1 = K[b + j.y];
    KC[cache + j.x] = x0 * cs.x - x1 * cs.y;
    KC[cache + j.y] = x0 * cs.y + x1 * cs.x;
    VC[cache + j.x] = V[b + j.x];
    VC[cache + j.y] = V[b + j.y];
}

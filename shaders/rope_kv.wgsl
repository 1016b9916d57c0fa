// RoPE on q (in place) and k at the step's position, then k and v into the cache at that position.
// One thread per pair of dimensions of every q and k head. Normal ordering rotates (2i, 2i+1); NeoX
// ordering rotates (i, i + n_rot/2). Dimensions past n_rot pass through.

struct Params {
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    n_rot: u32,
    freq_base: f32,
    freq_scale: f32,
    neox: u32,         // 1: NeoX ordering
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
    var j0 = 2u * i;
    var j1 = 2u * i + 1u;
    var c = 1.0;
    var s = 0.0;
    if (i < P.n_rot / 2u) {
        if (P.neox == 1u) {
            j0 = i;
            j1 = i + P.n_rot / 2u;
        }
        var theta = P.freq_scale * f32(step.pos) * pow(P.freq_base, -2.0 * f32(i) / f32(P.n_rot));
        if (P.has_factors == 1u) {
            theta /= factors[i];
        }
        c = cos(theta);
        s = sin(theta);
    }
    if (head < P.n_head) {
        let b = head * P.head_dim;
        let x0 = Q[b + j0];
        let x1 = Q[b + j1];
        Q[b + j0] = x0 * c - x1 * s;
        Q[b + j1] = x0 * s + x1 * c;
        return;
    }
    let kv_dim = P.n_kv_head * P.head_dim;
    let b = (head - P.n_head) * P.head_dim;
    let cache = step.pos * kv_dim + b;
    let x0 = K[b + j0];
    let x1 = K[b + j1];
    KC[cache + j0] = x0 * c - x1 * s;
    KC[cache + j1] = x0 * s + x1 * c;
    VC[cache + j0] = V[b + j0];
    VC[cache + j1] = V[b + j1];
}

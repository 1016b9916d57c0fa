// Attention of one query (the step's position) over the cache, grouped-query: one workgroup per q head,
// reading kv head head / (n_head / n_kv_head). Scores live in a scratch row per head. Needs reduce.wgsl.

struct Params {
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    n_ctx: u32,
    scale: f32,
}

struct Step {
    token: u32,
    pos: u32,
}

@group(0) @binding(0) var<storage, read> Q: array<f32>;              // (n_head, head_dim)
@group(0) @binding(1) var<storage, read> KC: array<f32>;             // (n_ctx, n_kv_head, head_dim)
@group(0) @binding(2) var<storage, read> VC: array<f32>;             // (n_ctx, n_kv_head, head_dim)
@group(0) @binding(3) var<storage, read_write> scores: array<f32>;   // (n_head, n_ctx)
@group(0) @binding(4) var<storage, read_write> O: array<f32>;        // (n_head, head_dim)
@group(0) @binding(5) var<storage, read> step: Step;
@group(0) @binding(6) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let h = wg.x;
    let kvh = h / (P.n_head / P.n_kv_head);
    let n = step.pos + 1u;
    let kv_dim = P.n_kv_head * P.head_dim;
    let q = h * P.head_dim;
    let row = h * P.n_ctx;

    var m = -3.0e38;
    for (var p = t; p < n; p += WG) {
        let k = p * kv_dim + kvh * P.head_dim;
        var s = 0.0;
        for (var d = 0u; d < P.head_dim; d++) {
            s += Q[q + d] * KC[k + d];
        }
        s *= P.scale;
        scores[row + p] = s;
        m = max(m, s);
    }
    m = reduce_max(t, m);

    var sum = 0.0;
    for (var p = t; p < n; p += WG) {
        let e = exp(scores[row + p] - m);
        scores[row + p] = e;
        sum += e;
    }
    sum = reduce_sum(t, sum);
    storageBarrier();

    for (var d = t; d < P.head_dim; d += WG) {
        var acc = 0.0;
        for (var p = 0u; p < n; p++) {
            acc += scores[row + p] * VC[p * kv_dim + kvh * P.head_dim + d];
        }
        O[q + d] = acc / sum;
    }
}

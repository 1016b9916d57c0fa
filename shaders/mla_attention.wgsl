// Multi-head Latent Attention in absorbed form, one workgroup per head: the head's query, already
// projected into the latent space (QA, by k_b), and its rope part (rotated here) attend over the one
// cache of latent rows; the output stays in the latent space (v_b takes it out). Scores live in a
// scratch row per head. Needs step.wgsl, rope.wgsl and reduce.wgsl.

const MAX_ROPE: u32 = 128u;

struct Params {
    rope: Rope,
    n_head: u32,
    kv_lora: u32,
    q_stride: u32,   // floats per head in Q
    q_rope: u32,     // where the rope part starts in a head of Q
    n_ctx: u32,
    scale: f32,
}

@group(0) @binding(0) var<storage, read> QA: array<f32>;             // (n_head, kv_lora)
@group(0) @binding(1) var<storage, read> Q: array<f32>;              // (n_head, q_stride)
@group(0) @binding(2) var<storage, read> C: array<f32>;              // (n_ctx, kv_lora + n_rot)
@group(0) @binding(3) var<storage, read_write> scores: array<f32>;   // (n_head, n_ctx)
@group(0) @binding(4) var<storage, read_write> O: array<f32>;        // (n_head, kv_lora)
@group(0) @binding(5) var<storage, read> step: Step;
@group(0) @binding(6) var<uniform> P: Params;

override WG: u32 = 64u;
var<workgroup> q_rot: array<f32, MAX_ROPE>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let h = wg.x;
    let n = step.pos + 1u;
    let n_rot = P.rope.n_rot;
    let width = P.kv_lora + n_rot;
    let qa = h * P.kv_lora;
    let row = h * P.n_ctx;

    let q = h * P.q_stride + P.q_rope;
    for (var i = t; i < n_rot / 2u; i += WG) {
        let j = rope_pair(P.rope, i);
        let cs = rope_cos_sin(P.rope, step.pos, i, 1.0);
        let x0 = Q[q + j.x];
        let x1 = Q[q + j.y];
        q_rot[j.x] = x0 * cs.x - x1 * cs.y;
        q_rot[j.y] = x0 * cs.y + x1 * cs.x;
    }
    workgroupBarrier();

    var m = -3.0e38;
    for (var p = t; p < n; p += WG) {
        let c = p * width;
        var s = 0.0;
        for (var d = 0u; d < P.kv_lora; d++) {
            s += QA[qa + d] * C[c + d];
        }
        for (var d = 0u; d < n_rot; d++) {
            s += q_rot[d] * C[c + P.kv_lora + d];
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

    for (var d = t; d < P.kv_lora; d += WG) {
        var acc = 0.0;
        for (var p = 0u; p < n; p++) {
            acc += scores[row + p] * C[p * width + d];
        }
        O[qa + d] = acc / sum;
    }
}

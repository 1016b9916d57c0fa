// Multi-head Latent Attention's cache write: each token's compressed kv (kv_lora latent values, then the
// shared rope part) becomes its cache row: the latent RMS-normed, the rope part rotated at the token's
// position. The latent is both MLA's key (with the rope part) and its value. One workgroup per token of
// the run, a thread a pair of neighbouring values at a time, which the cache takes as one word where it
// holds f16 (kv_f16.wgsl) and as two where f32 (kv_f32.wgsl). Needs step.wgsl, rope.wgsl and
// reduce.wgsl.

struct Params {
    rope: Rope,
    kv_lora: u32,
    eps: f32,
}

@group(0) @binding(0) var<storage, read> KV: array<f32>;            // (batch, kv_lora + n_rot)
@group(0) @binding(1) var<storage, read> Wn: array<f32>;            // (kv_lora)
@group(0) @binding(2) var<storage, read_write> C: array<Kv2>;       // (n_ctx, kv_lora + n_rot)
@group(0) @binding(3) var<storage, read> freqs: array<f32>;         // (n_rot / 2) each pair's frequency
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let token = wg.x;
    if (token >= step.n_tokens) {
        return;
    }
    let turn = step.tokens[token].turn;
    let width = P.kv_lora + P.rope.n_rot;
    let kv = token * width;
    let row = cache_row(token) * width;
    var sum = 0.0;
    for (var i = t; i < P.kv_lora; i += WG) {
        sum += KV[kv + i] * KV[kv + i];
    }
    let scale = inverseSqrt(reduce_sum(t, sum) / f32(P.kv_lora) + P.eps);
    for (var i = 2u * t; i < P.kv_lora; i += 2u * WG) {
        let x = vec2<f32>(KV[kv + i], KV[kv + i + 1u]) * scale * vec2<f32>(Wn[i], Wn[i + 1u]);
        C[(row + i) / 2u] = to_kv2(x);
    }
    for (var d = 2u * t; d < P.rope.n_rot; d += 2u * WG) {
        let x = vec2<f32>(rotated(kv, d, turn), rotated(kv, d + 1u, turn));
        C[(row + P.kv_lora + d) / 2u] = to_kv2(x);
    }
}

// Value `d` of the token's rope part (its compressed kv from `kv`), rotated at position `turn`: each of
// a pair's two values from both of the pair's.
fn rotated(kv: u32, d: u32, turn: u32) -> f32 {
    let pair = rope_pair_of(P.rope, d);
    let j = rope_pair(P.rope, pair.x) + P.kv_lora;
    let cs = rope_cos_sin(P.rope, turn, pair.x, freqs[pair.x]);
    let x0 = KV[kv + j.x];
    let x1 = KV[kv + j.y];
    return select(x0 * cs.y + x1 * cs.x, x0 * cs.x - x1 * cs.y, pair.y == 1u);
}

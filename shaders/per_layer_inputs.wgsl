// Gemma 4's per-layer inputs: for each token and layer, that layer's slice of the projected embedding,
// scaled and RMS-normed, plus the token's row of the per-layer table, the sum scaled:
// inputs = (rmsnorm(inputs * proj_scale) * w + rows) * input_scale, in place. One workgroup per
// (layer, token). Needs step.wgsl and reduce.wgsl.

struct Params {
    width: u32,       // values per layer
    n_layer: u32,
    eps: f32,
    proj_scale: f32,  // 1 / sqrt(n_embd)
    input_scale: f32, // 1 / sqrt(2)
}

@group(0) @binding(0) var<storage, read_write> inputs: array<f32>; // (batch, n_layer, width)
@group(0) @binding(1) var<storage, read> rows: array<f32>;         // (batch, n_layer, width)
@group(0) @binding(2) var<storage, read> Wn: array<f32>;           // (width) per_layer_proj_norm
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (wg.y >= step.n_tokens) {
        return;
    }
    let at = (wg.y * P.n_layer + wg.x) * P.width;
    var sum = 0.0;
    for (var i = t; i < P.width; i += WG) {
        let v = inputs[at + i] * P.proj_scale;
        sum += v * v;
    }
    let scale = inverseSqrt(reduce_sum(t, sum) / f32(P.width) + P.eps);
    for (var i = t; i < P.width; i += WG) {
        let normed = inputs[at + i] * P.proj_scale * scale * Wn[i];
        inputs[at + i] = (normed + rows[at + i]) * P.input_scale;
    }
}

// Row t of y = row t of x / sqrt(mean(x^2) + eps) * w, one workgroup per token of the run. Needs
// step.wgsl and reduce.wgsl.

struct Params {
    n: u32,
    eps: f32,
}

@group(0) @binding(0) var<storage, read> X: array<f32>;         // (batch, n)
@group(0) @binding(1) var<storage, read> Wn: array<f32>;        // (n)
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;   // (batch, n)
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (wg.y >= step.n_tokens) {
        return;
    }
    let row = wg.y * P.n;
    var sum = 0.0;
    for (var i = t; i < P.n; i += WG) {
        sum += X[row + i] * X[row + i];
    }
    let scale = inverseSqrt(reduce_sum(t, sum) / f32(P.n) + P.eps);
    for (var i = t; i < P.n; i += WG) {
        Y[row + i] = X[row + i] * scale * Wn[i];
    }
}

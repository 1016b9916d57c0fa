// y = x / sqrt(mean(x^2) + eps) * w, one workgroup over the whole vector. Needs reduce.wgsl.

struct Params {
    n: u32,
    eps: f32,
}

@group(0) @binding(0) var<storage, read> X: array<f32>;         // (n)
@group(0) @binding(1) var<storage, read> Wn: array<f32>;        // (n)
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;   // (n)
@group(0) @binding(3) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) t: u32) {
    var sum = 0.0;
    for (var i = t; i < P.n; i += WG) {
        sum += X[i] * X[i];
    }
    let scale = inverseSqrt(reduce_sum(t, sum) / f32(P.n) + P.eps);
    for (var i = t; i < P.n; i += WG) {
        Y[i] = X[i] * scale * Wn[i];
    }
}

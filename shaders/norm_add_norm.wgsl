// The end of a sublayer in models that norm its output before the residual add (Gemma 2/3), fused with
// the norm that reads the sum: x = (x + rmsnorm(t) * w_post) * scale (scale 1 but in Gemma 4), then
// y = rmsnorm(x) * w_next. One workgroup
// per token of the run; each thread reads back only the values of x it wrote. Needs step.wgsl and
// reduce.wgsl.

struct Params {
    n: u32,
    eps: f32,
    scale: f32,
}

@group(0) @binding(0) var<storage, read> T: array<f32>;          // (batch, n) the sublayer's output
@group(0) @binding(1) var<storage, read> Wpost: array<f32>;      // (n)
@group(0) @binding(2) var<storage, read_write> X: array<f32>;    // (batch, n) the residual stream
@group(0) @binding(3) var<storage, read> Wnext: array<f32>;      // (n)
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;    // (batch, n)
@group(0) @binding(5) var<storage, read> step: Step;
@group(0) @binding(6) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (wg.y >= step.n_tokens) {
        return;
    }
    let row = wg.y * P.n;
    var sum = 0.0;
    for (var i = t; i < P.n; i += WG) {
        sum += T[row + i] * T[row + i];
    }
    let post = inverseSqrt(reduce_sum(t, sum) / f32(P.n) + P.eps);
    sum = 0.0;
    for (var i = t; i < P.n; i += WG) {
        let x = (X[row + i] + T[row + i] * post * Wpost[i]) * P.scale;
        X[row + i] = x;
        sum += x * x;
    }
    let next = inverseSqrt(reduce_sum(t, sum) / f32(P.n) + P.eps);
    for (var i = t; i < P.n; i += WG) {
        Y[row + i] = X[row + i] * next * Wnext[i];
    }
}

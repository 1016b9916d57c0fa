// LayerNorm of each token row of the run into Y, and where `in_place` back into X too: (x - mean) /
// sqrt(var + eps) * w + b, one workgroup per token. BERT norms its residual stream itself after each
// residual add, and the next sublayer reads the same values from Y; a pre-norm encoder (SigLIP)
// leaves X as it was. Each thread reads and writes only its own indices, after both reductions, so
// the write back in place races with nothing. Needs step.wgsl and reduce.wgsl.

struct Params {
    n: u32,
    eps: f32,
    in_place: u32,
}

@group(0) @binding(0) var<storage, read_write> X: array<f32>;  // (batch, n)
@group(0) @binding(1) var<storage, read> Wn: array<f32>;       // (n)
@group(0) @binding(2) var<storage, read> Bn: array<f32>;       // (n)
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;  // (batch, n)
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (wg.y >= step.n_tokens) {
        return;
    }
    let row = wg.y * P.n;
    var sum = 0.0;
    for (var i = t; i < P.n; i += WG) {
        sum += X[row + i];
    }
    let mean = reduce_sum(t, sum) / f32(P.n);
    var squares = 0.0;
    for (var i = t; i < P.n; i += WG) {
        let d = X[row + i] - mean;
        squares += d * d;
    }
    let scale = inverseSqrt(reduce_sum(t, squares) / f32(P.n) + P.eps);
    for (var i = t; i < P.n; i += WG) {
        let v = (X[row + i] - mean) * scale * Wn[i] + Bn[i];
        if (P.in_place != 0u) {
            X[row + i] = v;
        }
        Y[row + i] = v;
    }
}

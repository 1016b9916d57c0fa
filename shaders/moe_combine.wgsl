// The end of a mixture-of-experts block over a run: each token's chosen experts' outputs summed by
// their weights into the residual stream. X[token, r] += sum over slots s of weight_s E[token, s, r].
// Needs step.wgsl.

struct Params {
    n: u32,      // values per row of X
    n_used: u32, // experts chosen per token
}

@group(0) @binding(0) var<storage, read> E: array<f32>;            // (batch, n_used, n)
@group(0) @binding(1) var<storage, read> route: array<u32>;        // (batch, n_used ids, n_used weights)
@group(0) @binding(2) var<storage, read_write> X: array<f32>;      // (batch, n)
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let r = id.x;
    let token = id.y;
    if (r >= P.n || token >= step.n_tokens) {
        return;
    }
    var sum = 0.0;
    for (var s = 0u; s < P.n_used; s++) {
        let w = bitcast<f32>(route[token * 2u * P.n_used + P.n_used + s]);
        sum += w * E[(token * P.n_used + s) * P.n + r];
    }
    X[token * P.n + r] += sum;
}

// Biases added to each token row of the run (gpt-oss's projections and experts). B holds one bias
// row, or a row per expert where a router chose among them:
//   P.mode 0: Y[t, i] += B[i]
//   P.mode 1: Y[t, s, i] += B[e_{t,s}, i]                      each slot's expert's row
//   P.mode 2: Y[t, i] += sum over slots s of w_{t,s} B[e_{t,s}, i]  weighted as the experts' outputs
// Needs step.wgsl.

struct Params {
    n: u32,      // values per bias row
    n_used: u32, // experts chosen per token (modes 1 and 2)
    mode: u32,
}

@group(0) @binding(0) var<storage, read> B: array<f32>;            // (n) or (n_expert, n)
@group(0) @binding(1) var<storage, read> route: array<u32>;        // (batch, n_used ids, n_used weights)
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;      // (batch, n) or (batch, n_used, n)
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    let token = id.y;
    if (i >= P.n || token >= step.n_tokens) {
        return;
    }
    let ids = token * 2u * P.n_used;
    if (P.mode == 0u) {
        Y[token * P.n + i] += B[i];
    } else if (P.mode == 1u) {
        for (var s = 0u; s < P.n_used; s++) {
            Y[(token * P.n_used + s) * P.n + i] += B[route[ids + s] * P.n + i];
        }
    } else {
        var sum = 0.0;
        for (var s = 0u; s < P.n_used; s++) {
            let w = bitcast<f32>(route[ids + P.n_used + s]);
            sum += w * B[route[ids + s] * P.n + i];
        }
        Y[token * P.n + i] += sum;
    }
}

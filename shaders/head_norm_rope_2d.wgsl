// Each head of each token's row RMS-normed (times a gain per dimension), then rotated in two halves
// by the token's place in an image's grid: the first half of the head as a NeoX rotation of half a
// head at the token's column, the second half likewise at its row (Gemma 4's vision encoder: its
// queries and keys normed with gains and rotated, its values normed alone). In place. One workgroup
// per (head, token); each thread rotates whole pairs, so no value is read after another thread
// writes it. Needs step.wgsl, reduce.wgsl and grid.wgsl.

struct Params {
    n_head: u32,
    head_dim: u32, // a multiple of 4
    eps: f32,
    rotate: u32,   // 0: norm only
}

@group(0) @binding(0) var<storage, read_write> X: array<f32>;  // (batch, n_head * head_dim)
@group(0) @binding(1) var<storage, read> gain: array<f32>;     // (head_dim)
@group(0) @binding(2) var<storage, read> freqs: array<f32>;    // (head_dim / 4): pair i turns at freqs[i] a position
@group(0) @binding(3) var<storage, read> grid: Grid;
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let token = wg.y;
    if (token >= step.n_tokens) {
        return;
    }
    let at = (token * P.n_head + wg.x) * P.head_dim;
    var sum = 0.0;
    for (var i = t; i < P.head_dim; i += WG) {
        sum += X[at + i] * X[at + i];
    }
    let scale = inverseSqrt(reduce_sum(t, sum) / f32(P.head_dim) + P.eps);
    let place = grid_place(grid.cols, token);
    let half = P.head_dim / 2u;
    let quarter = P.head_dim / 4u;
    // Pair p: half p / quarter, dimensions i and i + quarter of that half.
    for (var p = t; p < half; p += WG) {
        let j = p % quarter;
        let a = (p / quarter) * half + j;
        let b = a + quarter;
        let xa = X[at + a] * scale * gain[a];
        let xb = X[at + b] * scale * gain[b];
        if (P.rotate == 0u) {
            X[at + a] = xa;
            X[at + b] = xb;
            continue;
        }
        let pos = select(place.y, place.x, p < quarter);
        let theta = f32(pos) * freqs[j];
        let c = cos(theta);
        let s = sin(theta);
        X[at + a] = xa * c - xb * s;
        X[at + b] = xa * s + xb * c;
    }
}

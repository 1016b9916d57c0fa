// Each head of each token's row RMS-normed (times a gain per dimension) where `norm` says, then
// rotated by the token's place in an image's grid, in place. Two layouts of the rotation:
// - `rotate` 1 (Gemma 4's vision encoder, whose queries and keys are normed with gains and rotated,
//   its values normed alone): the first half of the head a NeoX rotation of half a head at the
//   token's column, the second half likewise at its row;
// - `rotate` 2 (Qwen-VL's vision encoder, unnormed): pair p of the head's first half rotates
//   dimensions p and p + head_dim / 2, the first quarter of pairs at the token's row, the second at
//   its column (ggml's vision RoPE).
// Pair j of a quarter turns at freqs[j] a position in both. One workgroup per (head, token); each
// thread rotates whole pairs, so no value is read after another thread writes it. Needs step.wgsl,
// reduce.wgsl and grid.wgsl.

struct Params {
    n_head: u32,
    head_dim: u32, // a multiple of 4
    eps: f32,
    norm: u32,     // 1: RMS-normed times the gain first
    rotate: u32,   // 0: not rotated; 1, 2: the layouts above
}

@group(0) @binding(0) var<storage, read_write> X: array<f32>;  // (batch, n_head * head_dim)
@group(0) @binding(1) var<storage, read> gain: array<f32>;     // (head_dim)
@group(0) @binding(2) var<storage, read> freqs: array<f32>;    // (head_dim / 4): pair j turns at freqs[j] a position
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
    var scale = 1.0;
    if (P.norm == 1u) {
        var sum = 0.0;
        for (var i = t; i < P.head_dim; i += WG) {
            sum += X[at + i] * X[at + i];
        }
        scale = inverseSqrt(reduce_sum(t, sum) / f32(P.head_dim) + P.eps);
    }
    let place = grid_place(grid, token);
    let half = P.head_dim / 2u;
    let quarter = P.head_dim / 4u;
    for (var p = t; p < half; p += WG) {
        let j = p % quarter;
        let first = p < quarter;
        // Gemma 4's: half p / quarter, dimensions j and j + quarter of that half, columns first.
        var a = (p / quarter) * half + j;
        var b = a + quarter;
        var pos = select(place.y, place.x, first);
        if (P.rotate == 2u) {
            a = p;
            b = p + half;
            pos = select(place.x, place.y, first);
        }
        var xa = X[at + a];
        var xb = X[at + b];
        if (P.norm == 1u) {
            xa *= scale * gain[a];
            xb *= scale * gain[b];
        }
        if (P.rotate == 0u) {
            X[at + a] = xa;
            X[at + b] = xb;
            continue;
        }
        let theta = f32(pos) * freqs[j];
        let c = cos(theta);
        let s = sin(theta);
        X[at + a] = xa * c - xb * s;
        X[at + b] = xa * s + xb * c;
    }
}

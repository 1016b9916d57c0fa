// The first pass of greedy decoding's choice: for each part of each token's row (a workgroup each),
// its largest value, the first of equals, and the sum of exp(x - it) over the part, into `out` where
// argmax_reduce.wgsl's part_at says. A row may hold only the tokens a grammar allows: its flag in
// `allowed` set, the bits of the allowed ids after it. (One workgroup a row, walking 152k logits, took
// 0.1-0.2 ms of a step on an H200.) Needs step.wgsl and argmax_reduce.wgsl.

@group(0) @binding(0) var<storage, read> X: array<f32>;         // (batch, n)
@group(0) @binding(1) var<storage, read> step: Step;
@group(0) @binding(2) var<storage, read_write> out: array<u32>; // choices, chances, parts
@group(0) @binding(3) var<storage, read> allowed: array<u32>;   // (batch, 1 + words)
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (wg.y >= step.n_tokens) {
        return;
    }
    let row = wg.y * P.n;
    let mask = wg.y * (1u + P.words);
    let masked = allowed[mask] != 0u;
    let len = (P.n + P.parts - 1u) / P.parts;
    let end = min(P.n, (wg.x + 1u) * len);
    var v = -3.4e38;
    var i = 0xffffffffu;
    var sum = 0.0;
    for (var j = wg.x * len + t; j < end; j += WG) {
        let x = X[row + j];
        let ok = !masked || ((allowed[mask + 1u + j / 32u] >> (j % 32u)) & 1u) == 1u;
        if (!ok) {
            continue;
        }
        if (before(x, j, v, i)) {
            sum = sum * exp(v - x) + 1.0;
            v = x;
            i = j;
        } else {
            sum += exp(x - v);
        }
    }
    reduce_best(t, v, i, sum);
    if (t == 0u) {
        let at = part_at(wg.y, wg.x);
        out[at] = bitcast<u32>(best_value[0]);
        out[at + 1u] = best_index[0];
        out[at + 2u] = bitcast<u32>(sums[0]);
    }
}

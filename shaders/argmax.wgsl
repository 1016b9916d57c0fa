// out[t] = the index of the largest value of row t (the first of equals, as the CPU's argmax): greedy
// decoding's choice, read back instead of the row. One workgroup per token of the run. A row may hold
// only the tokens a grammar allows: its flag in `allowed` set, the bits of the allowed ids after it.
// Needs step.wgsl.

struct Params {
    n: u32,     // values per row
    words: u32, // u32s of a row's allowed bits (after its flag)
}

@group(0) @binding(0) var<storage, read> X: array<f32>;         // (batch, n)
@group(0) @binding(1) var<storage, read> step: Step;
@group(0) @binding(2) var<storage, read_write> out: array<u32>; // (batch)
@group(0) @binding(3) var<storage, read> allowed: array<u32>;   // (batch, 1 + words)
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 256u;

var<workgroup> best_value: array<f32, 256>;
var<workgroup> best_index: array<u32, 256>;

// Whether (v, i) goes before (w, j): larger, or as large and earlier.
fn before(v: f32, i: u32, w: f32, j: u32) -> bool {
    return v > w || (v == w && i < j);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (wg.y >= step.n_tokens) {
        return;
    }
    let row = wg.y * P.n;
    let mask = wg.y * (1u + P.words);
    let masked = allowed[mask] != 0u;
    var v = -3.4e38;
    var i = 0xffffffffu;
    for (var j = t; j < P.n; j += WG) {
        let x = X[row + j];
        let ok = !masked || ((allowed[mask + 1u + j / 32u] >> (j % 32u)) & 1u) == 1u;
        if (ok && before(x, j, v, i)) {
            v = x;
            i = j;
        }
    }
    best_value[t] = v;
    best_index[t] = i;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s && before(best_value[t + s], best_index[t + s], best_value[t], best_index[t])) {
            best_value[t] = best_value[t + s];
            best_index[t] = best_index[t + s];
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        // A row with no value above -3.4e38 (all -inf or NaN) picks 0, as the CPU's argmax does.
        out[wg.y] = select(best_index[0], 0u, best_index[0] == 0xffffffffu);
    }
}

// out[t] = the index of the largest value of row t (the first of equals, as the CPU's argmax): greedy
// decoding's choice, read back instead of the row; out[rows + t] = its chance (the bits of an f32):
// the softmax of the row at it, 1 / sum(exp(x - largest)), which tells a draft model how sure it is
// of its choice. One workgroup per token of the run. A row may hold only the tokens a grammar
// allows: its flag in `allowed` set, the bits of the allowed ids after it. Needs step.wgsl.

struct Params {
    n: u32,     // values per row
    words: u32, // u32s of a row's allowed bits (after its flag)
    rows: u32,  // rows of `out`'s choices, after which their chances lie
}

@group(0) @binding(0) var<storage, read> X: array<f32>;         // (batch, n)
@group(0) @binding(1) var<storage, read> step: Step;
@group(0) @binding(2) var<storage, read_write> out: array<u32>; // (2, rows)
@group(0) @binding(3) var<storage, read> allowed: array<u32>;   // (batch, 1 + words)
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 256u;

var<workgroup> best_value: array<f32, 256>;
var<workgroup> best_index: array<u32, 256>;
// Each thread's sum of exp(x - its best value) over the values it read, then the merged sums.
var<workgroup> sums: array<f32, 256>;

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
    var sum = 0.0;
    for (var j = t; j < P.n; j += WG) {
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
    best_value[t] = v;
    best_index[t] = i;
    sums[t] = sum;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            let a = best_value[t];
            let b = best_value[t + s];
            let top = max(a, b);
            sums[t] = sums[t] * exp(a - top) + sums[t + s] * exp(b - top);
            if (before(b, best_index[t + s], a, best_index[t])) {
                best_value[t] = b;
                best_index[t] = best_index[t + s];
            }
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        // A row with no value above -3.4e38 (all -inf or NaN) picks 0, as the CPU's argmax does.
        let none = best_index[0] == 0xffffffffu;
        out[wg.y] = select(best_index[0], 0u, none);
        out[P.rows + wg.y] = bitcast<u32>(select(1.0 / sums[0], 0.0, none));
    }
}

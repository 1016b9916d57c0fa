// What the two passes of greedy decoding's choice share (argmax_parts.wgsl, then argmax.wgsl): their
// parameters, and the workgroup's merge of one (largest value, its index, sum of exp(x - that value))
// a thread into thread 0's. The first pass leaves each part of each token's row such a triple in
// `out`, after the rows' choices and chances: 3 words from 2 rows + 3 (token parts + part).

struct Params {
    n: u32,     // values per row
    words: u32, // u32s of a row's allowed bits (after its flag)
    rows: u32,  // rows of `out`'s choices, after which their chances lie, and then the parts
    parts: u32, // parts of a row the first pass takes, a workgroup each
}

var<workgroup> best_value: array<f32, 256>;
var<workgroup> best_index: array<u32, 256>;
// Each thread's sum of exp(x - its best value) over the values it read, then the merged sums.
var<workgroup> sums: array<f32, 256>;

// Whether (v, i) goes before (w, j): larger, or as large and earlier.
fn before(v: f32, i: u32, w: f32, j: u32) -> bool {
    return v > w || (v == w && i < j);
}

// Where part p of token row r's triple lies in `out`.
fn part_at(r: u32, p: u32) -> u32 {
    return 2u * P.rows + 3u * (r * P.parts + p);
}

// Merges the threads' triples; thread 0's slots then hold the workgroup's. Call from uniform control
// flow.
fn reduce_best(t: u32, v: f32, i: u32, sum: f32) {
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
}

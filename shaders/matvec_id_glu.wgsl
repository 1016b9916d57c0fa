// h for the experts a router chose (mixture-of-experts, one token): gate's and up's rows interleaved in
// one stacked tensor (expert e's pair r at rows 2 (e rows + r) and 2 (e rows + r) + 1), read by index
// as matvec_id.wgsl reads its rows, each pair's sums (plus the pair's biases, where the experts have
// them) made into h[s * rows + r] = glu(gate, up) by the activation file. One dispatch where gate, up
// and the activation took three. The TPR threads of a pair split its rows as the row_dot file says,
// reading each x once for both. A tensor split into parts is dispatched once per part (parts hold
// whole pairs); pairs outside the part are skipped. x is read as the x file says: as it is
// (x_rows.wgsl), or normed by RMSNorm on the way in (x_rms_norm.wgsl), each pair's sums then scaled
// by x_scale before the biases. Needs an x file, a row_dot file (on 8-bit x too: every pair reads the
// one x), a row_sum file and an activation file.

struct Params {
    rows: u32,       // values of h per expert (pairs of rows)
    cols: u32,       // weights per row (a multiple of 32)
    row_bytes: u32,
    first_row: u32,  // this part's first row in the stacked tensor
    part_rows: u32,
    n_slots: u32,    // experts chosen per token
    has_bias: u32,
}

// W's words, one by one or as vec4s: the words file's WeightWord, as in matvec.wgsl.
@group(0) @binding(0) var<storage, read> W: array<WeightWord>;
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;    // (n_slots, rows)
@group(0) @binding(3) var<storage, read> route: array<u32>;      // (n_slots) ids, (n_slots) f32 weights
@group(0) @binding(4) var<storage, read> B: array<f32>;          // (n_expert * 2 rows), or unused
@group(0) @binding(5) var<uniform> P: Params;

override WG: u32 = 64u;
override TPR: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    // What the row_dot file does with x before the rows: every slot reads the one x, which
    // row_dot_q8.wgsl quantizes here.
    x_prepare(t, 0u, P.cols);
    let item = (wg.x + wg.y * nwg.x) * (WG / TPR) + t / TPR;
    var g = 0u; // the pair's gate row in the stacked tensor; up's is g + 1
    var here = false;
    var acc = vec2<f32>(0.0);
    if (item < P.rows * P.n_slots) {
        g = 2u * (route[item / P.rows] * P.rows + item % P.rows);
        if (g >= P.first_row && g < P.first_row + P.part_rows) {
            here = true;
            acc = pair_dot((g - P.first_row) * P.row_bytes, P.row_bytes, 0u, P.cols, t % TPR);
        }
    }
    var sum = pair_sum(t, acc) * x_scale(t, P.cols);
    if (t % TPR == 0u && here) {
        if (P.has_bias == 1u) {
            sum += vec2<f32>(B[g], B[g + 1u]);
        }
        Y[item] = glu(sum.x, sum.y);
    }
}

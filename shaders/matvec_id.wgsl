// Matvecs over the experts a router chose (mixture-of-experts), read by index from the stacked expert
// tensor (n_expert * rows rows) with no copy and no trip to the CPU. The route buffer holds the chosen
// experts' ids, then their weights as f32 bits. Two modes:
// - per slot: Y[s * rows + r] = dot(W[e_s * rows + r], x_s) + B[e_s * rows + r], for gate and up;
// - combine: Y[r] += sum over s of weight_s * (dot(W[e_s * rows + r], x_s) + B[e_s * rows + r]), for
//   down, into the residual.
// B, the experts' biases, where they have them (gpt-oss); 0 otherwise.
// A tensor split into parts is dispatched once per part; rows of experts outside the part are skipped.
// Needs x_rows.wgsl, a row_dot file (on 8-bit x too) and a row_sum file.

struct Params {
    rows: u32,           // rows of one expert
    cols: u32,           // weights per row (a multiple of 32)
    row_bytes: u32,
    first_row: u32,      // this part's first row in the stacked tensor
    part_rows: u32,
    n_slots: u32,        // experts chosen per token
    x_slot_stride: u32,  // vec4s between consecutive slots' inputs (0: one x for all)
    combine: u32,
    has_bias: u32,
}

// W's words, one by one or as vec4s: the words file's WeightWord, as in matvec.wgsl.
@group(0) @binding(0) var<storage, read> W: array<WeightWord>;
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<storage, read> route: array<u32>;      // (n_slots) ids, (n_slots) f32 weights
@group(0) @binding(4) var<storage, read> B: array<f32>;          // (n_expert * rows), or unused
@group(0) @binding(5) var<uniform> P: Params;

override WG: u32 = 64u;
override TPR: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    // What the row_dot file does with x before the rows: row_dot_q8.wgsl quantizes the slots' x here.
    x_prepare_rows(t, P.x_slot_stride, P.cols);
    let item = (wg.x + wg.y * nwg.x) * (WG / TPR) + t / TPR;
    let combine = P.combine == 1u;
    let r = select(item % P.rows, item, combine);
    let first_slot = select(item / P.rows, 0u, combine);
    let last_slot = select(first_slot + 1u, P.n_slots, combine);
    let valid = select(item < P.rows * P.n_slots, item < P.rows, combine);
    var acc = 0.0;
    var here = false;
    if (valid) {
        for (var s = first_slot; s < last_slot; s++) {
            let g = route[s] * P.rows + r;
            if (g >= P.first_row && g < P.first_row + P.part_rows) {
                here = true;
                var d = row_dot((g - P.first_row) * P.row_bytes, s * P.x_slot_stride, P.cols, t % TPR);
                // The bias once per row: in the lane that writes it.
                if (P.has_bias == 1u && t % TPR == 0u) {
                    d += B[g];
                }
                acc += select(d, bitcast<f32>(route[P.n_slots + s]) * d, combine);
            }
        }
    }
    let total = row_sum(t, acc);
    if (t % TPR == 0u && here) {
        if (combine) {
            Y[r] += total;
        } else {
            Y[item] = total;
        }
    }
}

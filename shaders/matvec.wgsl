// y[row] = dot(W[row], x) (+ y[row] when accumulating: the residual add) (+ the row's bias, where the
// matrix has one), W packed.
// A workgroup of WG threads takes WG / TPR slots of ROWS rows; the TPR threads of a slot split its row as
// the row_dot file says (by 32-weight chunks, or for the K-quants by whole blocks), and a slot of two
// or four rows (neighbours, as llama.cpp's matvecs take two or more) reads each x once for them all
// and has more weights in flight a thread.
// Rows may come in groups that each read their own slice of x (per-head matrices stacked in one tensor,
// as MLA's k_b and v_b): row r reads x from vec4 (r / group_rows) * group_stride. Needs a row_dot file
// and a row_sum file.

struct Params {
    rows: u32,         // rows in this part of W
    cols: u32,         // weights per row (a multiple of 32)
    row_bytes: u32,    // bytes of one packed row
    out_offset: u32,   // index in y of this part's first row
    accumulate: u32,   // 1: y += W x
    group_rows: u32,   // rows that share one slice of x
    group_stride: u32, // vec4s between the slices of consecutive groups (0: one x for all)
    bias_at: u32,      // index in B of this part's first row's bias; NO_BIAS: none
}

const NO_BIAS: u32 = 0xffffffffu;

// W's words, one by one or as vec4s (where a block's parts load a vec4 each): the words file's
// WeightWord (shaders/dequant/words.wgsl, words_vec4.wgsl).
@group(0) @binding(0) var<storage, read> W: array<WeightWord>;     // (rows, row_bytes / 4) words
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;      // (out_offset + rows)
@group(0) @binding(3) var<storage, read> B: array<f32>;            // the whole matrix's biases, or unused
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u;
override TPR: u32 = 64u; // threads per row, a power of two dividing WG
override ROWS: u32 = 1u; // rows a slot of TPR threads takes: 1, 2 or 4 (1 in groups of rows)

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let first = (wg.x + wg.y * nwg.x) * (WG / TPR) * ROWS;
    // What the row_dot file does with x before the rows (row_dot_q8.wgsl quantizes the one x of the
    // workgroup's first row).
    x_prepare(t, ((P.out_offset + first) / P.group_rows) * P.group_stride, P.cols);
    let row = first + (t / TPR) * ROWS;
    let o = P.out_offset + row;
    let x0 = (o / P.group_rows) * P.group_stride;
    if (ROWS == 4u) {
        // Rows past the part read what follows it, and are not stored.
        var acc4 = vec4<f32>(0.0);
        if (row < P.rows) {
            acc4 = quad_dot(row * P.row_bytes, P.row_bytes, x0, P.cols, t % TPR);
        }
        let total4 = quad_sum(t, acc4);
        if (t % TPR == 0u) {
            store_row(row, o, total4.x);
            store_row(row + 1u, o + 1u, total4.y);
            store_row(row + 2u, o + 2u, total4.z);
            store_row(row + 3u, o + 3u, total4.w);
        }
        return;
    }
    if (ROWS == 2u) {
        // An odd last row pairs with what follows it, which is not stored.
        var acc = vec2<f32>(0.0);
        if (row < P.rows) {
            acc = pair_dot(row * P.row_bytes, P.row_bytes, x0, P.cols, t % TPR);
        }
        let total = pair_sum(t, acc);
        if (t % TPR == 0u) {
            store_row(row, o, total.x);
            store_row(row + 1u, o + 1u, total.y);
        }
        return;
    }
    var acc = 0.0;
    if (row < P.rows) {
        acc = row_dot(row * P.row_bytes, x0, P.cols, t % TPR);
    }
    let total = row_sum(t, acc);
    if (t % TPR == 0u) {
        store_row(row, o, total);
    }
}

// Y[o] (row `row` of this part) = its sum (+ Y[o] when accumulating) (+ its bias), where the row is
// one of the part's.
fn store_row(row: u32, o: u32, total: f32) {
    if (row >= P.rows) {
        return;
    }
    var y = select(0.0, Y[o], P.accumulate == 1u) + total;
    if (P.bias_at != NO_BIAS) {
        y += B[P.bias_at + row];
    }
    Y[o] = y;
}

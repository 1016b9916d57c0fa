// X W^T for the tokens of a run where W's rows come in groups that each read their own slice of a
// token's x (per-head matrices stacked in one tensor, as MLA's k_b and v_b): row r of group g is
// dot(W[g * rows + r], x[token, g * group_stride ..]), written to Y[token, g * rows + r]. A workgroup
// per tile of TM rows of one group by TN tokens (matmul_tile.wgsl). A tensor split into parts is
// dispatched once per part; each part computes its rows. Needs step.wgsl and matmul_tile.wgsl.

struct Params {
    rows: u32,         // rows of one group
    cols: u32,         // weights per row (a multiple of 32)
    row_bytes: u32,
    first_row: u32,    // this part's first row in the stacked tensor
    part_rows: u32,
    group_stride: u32, // vec4s between consecutive groups' slices of a token's x
    x_stride: u32,     // vec4s in a token's row of X
    y_stride: u32,     // floats in a token's row of Y
}

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;      // (batch, x_stride)
@group(0) @binding(2) var<storage, read> step: Step;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;      // (batch, y_stride)
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u; // the tile's threads (matmul_tile.wgsl)

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let g = wg.z;
    let token0 = wg.y * TN;
    if (token0 >= step.n_tokens) {
        return;
    }
    // The tile's rows, in the stacked tensor: inside group g and inside this part.
    let row0 = wg.x * TM;
    let g0 = g * P.rows + row0;
    let start = max(g0, P.first_row);
    let end = min(min(g0 + TM, (g + 1u) * P.rows), P.first_row + P.part_rows);
    if (start >= end) {
        return;
    }
    let tokens = min(TN, step.n_tokens - token0);
    if (t < TN) {
        x_rows[t] = (token0 + t) * P.x_stride + g * P.group_stride;
    }
    workgroupBarrier();
    let lo = start - g0;
    let hi = end - g0;
    let acc = multiply_tile(t, lo, hi, start - P.first_row, tokens);

    let my_rows = tile_rows(t);
    let my_tokens = tile_tokens(t);
    for (var r = 0u; r < RB; r++) {
        let j = my_rows + r;
        for (var n = 0u; n < 4u; n++) {
            if (j >= lo && j < hi && my_tokens + n < tokens) {
                Y[(token0 + my_tokens + n) * P.y_stride + g0 + j] = acc[r][n];
            }
        }
    }
}

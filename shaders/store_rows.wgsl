// The plain store of the kernels that end in store_pair: both rows as they are, y = W x (+ y when
// accumulating: the residual add), into rows of out_stride values, one per token.

struct Params {
    rows: u32,       // rows in this part of W
    cols: u32,       // weights per row (a multiple of 32)
    row_bytes: u32,  // bytes of one packed row
    out_offset: u32, // index in a token's row of Y of this part's first row
    accumulate: u32, // 1: Y += X W^T
    out_stride: u32, // floats in a token's row of Y (all parts' rows)
}

@group(0) @binding(3) var<storage, read_write> Y: array<f32>;      // (batch, out_stride)
@group(0) @binding(4) var<uniform> P: Params;

fn store_pair(token: u32, row: u32, a: f32, b: f32) {
    let y = token * P.out_stride + P.out_offset + row;
    Y[y] = select(0.0, Y[y], P.accumulate == 1u) + a;
    if (row + 1u < P.rows) {
        Y[y + 1u] = select(0.0, Y[y + 1u], P.accumulate == 1u) + b;
    }
}

// A gated feed-forward block's store: W holds gate's and up's rows interleaved (gate i, up i), so a pair
// of rows is one value of h = glu(gate x, up x). Needs an activation file.

struct Params {
    rows: u32,       // rows in this part of W: twice its values of h
    cols: u32,
    row_bytes: u32,
    out_offset: u32, // index in a token's row of H of this part's first value
    out_stride: u32, // floats in a token's row of H
}

@group(0) @binding(3) var<storage, read_write> H: array<f32>;      // (batch, out_stride)
@group(0) @binding(4) var<uniform> P: Params;

fn store_pair(token: u32, row: u32, gate: f32, up: f32) {
    H[token * P.out_stride + P.out_offset + row / 2u] = glu(gate, up);
}

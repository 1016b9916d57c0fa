// The store of a gate whose other half comes from elsewhere (Gemma's per-layer input: GELU of the
// gate's row times the same row of the layer's slice of the inputs), so that the product and the
// gating take one dispatch: y = glu(row of W x, the row's value of U). Needs an activation file.

struct Params {
    rows: u32,       // rows in this part of W
    cols: u32,       // weights per row (a multiple of 32)
    row_bytes: u32,  // bytes of one packed row
    out_offset: u32, // index in a token's row of Y (and of U's slice) of this part's first row
    out_stride: u32, // floats in a token's row of Y
    u_offset: u32,   // where the slice starts in a token's row of U
    u_stride: u32,   // floats in a token's row of U
}

@group(0) @binding(3) var<storage, read_write> Y: array<f32>;      // (batch, out_stride)
@group(0) @binding(4) var<storage, read> U: array<f32>;            // (batch, u_stride)
@group(0) @binding(5) var<uniform> P: Params;

fn store_pair(token: u32, row: u32, a: f32, b: f32) {
    let o = P.out_offset + row;
    let y = token * P.out_stride + o;
    let u = token * P.u_stride + P.u_offset + o;
    Y[y] = glu(a, U[u]);
    if (row + 1u < P.rows) {
        Y[y + 1u] = glu(b, U[u + 1u]);
    }
}

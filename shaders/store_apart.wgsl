// The store of two matrices that read the same x, stacked into one so that they take one dispatch,
// whose outputs the kernels after them read apart (Multi-head Latent Attention's query, or its
// low-rank part, and its compressed kv): the stack's rows [0, split) go to Y0, a token's row of
// `split` values, and the rest to Y1, a token's row of the others. `split` is even, so a pair of rows
// never straddles it.

struct Params {
    rows: u32,       // rows in this part of W
    cols: u32,       // weights per row (a multiple of 32)
    row_bytes: u32,  // bytes of one packed row
    out_offset: u32, // the index of this part's first row among the stack's
    split: u32,      // the stack's rows that go to Y0
    total: u32,      // the stack's rows
}

@group(0) @binding(3) var<storage, read_write> Y0: array<f32>;     // (batch, split)
@group(0) @binding(4) var<storage, read_write> Y1: array<f32>;     // (batch, total - split)
@group(0) @binding(5) var<uniform> P: Params;

fn store_pair(token: u32, row: u32, a: f32, b: f32) {
    let o = P.out_offset + row;
    let both = row + 1u < P.rows;
    if (o < P.split) {
        let y = token * P.split + o;
        Y0[y] = a;
        if (both) {
            Y0[y + 1u] = b;
        }
    } else {
        let y = token * (P.total - P.split) + o - P.split;
        Y1[y] = a;
        if (both) {
            Y1[y + 1u] = b;
        }
    }
}

// X W^T for the tokens of a run where W's rows come in groups that each read their own slice of a
// token's x (per-head matrices stacked in one tensor, as MLA's k_b and v_b): row r of group g is
// dot(W[g * rows + r], x[token, g * group_stride ..]), written to Y[token, g * rows + r]. A workgroup
// per tile of TM rows of one group by TN tokens in a tile file's products (matmul_tile.wgsl, or
// matmul_rows_tile.wgsl where workgroups run on a CPU). A tensor split into parts is dispatched once
// per part; each part computes its rows. Needs step.wgsl, tile.wgsl, tile_x_rows.wgsl and the tile
// file.

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

override WG: u32 = 64u; // the tile's threads

// The workgroup's group (wg.z).
var<private> group: u32;

fn x_start(tile: Tile, n: u32) -> u32 {
    return (tile.token0 + n) * P.x_stride + group * P.group_stride;
}

// The tile's row j is the group's row row0 + j, where it is in [lo, hi).
fn store_sums(tile: Tile, n: u32, j: u32, a: f32, b: f32) {
    let y = (tile.token0 + n) * P.y_stride + group * P.rows + tile.row0 + j;
    if (j >= tile.lo && j < tile.hi) {
        Y[y] = a;
    }
    if (j + 1u >= tile.lo && j + 1u < tile.hi) {
        Y[y + 1u] = b;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let g = wg.z;
    group = g;
    let token0 = wg.y * TN;
    if (token0 >= step.n_tokens) {
        return;
    }
    // The tile's rows, in the stacked tensor: inside the group and inside this part.
    let row0 = wg.x * TM;
    let g0 = g * P.rows + row0;
    let start = max(g0, P.first_row);
    let end = min(min(g0 + TM, (g + 1u) * P.rows), P.first_row + P.part_rows);
    if (start >= end) {
        return;
    }
    let tokens = min(TN, step.n_tokens - token0);
    multiply_tile(t, Tile(row0, token0, tokens, start - g0, end - g0, start - P.first_row));
}

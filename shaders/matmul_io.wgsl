// Where the prompt's plain product (matmul.wgsl, matmul_coop.wgsl) reads x and stores its sums:
// tile.wgsl's x_start and store_sums for X of a row per token and the store file's store_pair.

@group(0) @binding(0) var<storage, read> W: array<u32>;            // (rows, row_bytes / 4)
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;      // (batch, cols / 4)
@group(0) @binding(2) var<storage, read> step: Step;

fn x_start(tile: Tile, n: u32) -> u32 {
    return (tile.token0 + n) * (P.cols / 4u);
}

// The tile's rows are [0, hi): those of this part of W from row0 on.
fn store_sums(tile: Tile, n: u32, j: u32, a: f32, b: f32) {
    if (j < tile.hi) {
        store_pair(tile.token0 + n, tile.row0 + j, a, b);
    }
}

// Workgroup wg's tile, or none (no tokens) past the run's.
fn plain_tile(wg: vec3<u32>) -> Tile {
    let row0 = wg.x * TM;
    let token0 = wg.y * TN;
    let tokens = select(0u, min(TN, step.n_tokens - token0), token0 < step.n_tokens);
    return Tile(row0, token0, tokens, 0u, min(TM, P.rows - row0), row0);
}

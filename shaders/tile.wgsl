// What the tile files (matmul_tile.wgsl, matmul_rows_tile.wgsl, matmul_coop_tile.wgsl) share with
// the kernels that call them. A kernel computes its workgroup's Tile, defines x_start(tile, n) (the
// vec4 where the tile's token n's row of X starts) and store_sums(tile, n, j, a, b) (the sums of tile
// rows j and j + 1, j even, for token n < tile.tokens; rows outside [lo, hi) are the kernel's to
// skip), and calls the tile file's multiply_tile from uniform control flow.

// Where a workgroup's tile lies: its first row and token (the kernel's own counting), the tokens it
// holds, and its rows: tile row j in [lo, hi) (not empty) is the bound W's row first + j - lo.
struct Tile {
    row0: u32,
    token0: u32,
    tokens: u32,
    lo: u32,
    hi: u32,
    first: u32,
}

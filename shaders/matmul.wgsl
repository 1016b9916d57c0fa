// X W^T for the tokens of a run: the prompt's matrix product (or a step's, of a few tokens), W packed,
// a workgroup per tile of TM rows by TN tokens in a tile file's products (matmul_tile.wgsl, or
// matmul_rows_tile.wgsl where workgroups run on a CPU), x read as it is or normed on the way in as
// the tile_x file says. The results go out in pairs of rows through the store file, which declares
// Params (with rows, cols and row_bytes) and the outputs, and defines store_pair. Needs step.wgsl,
// tile.wgsl, matmul_io.wgsl, a tile_x file and the tile file.

override WG: u32 = 64u; // the tile's threads

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let tile = plain_tile(wg);
    if (tile.tokens == 0u) {
        return;
    }
    multiply_tile(t, tile);
}

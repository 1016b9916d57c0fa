// X W^T for the tokens of a prompt's chunk on the adapter's matrix cores (cooperative matrices): the
// tile of matmul.wgsl, TM rows of W by TN tokens, in matmul_coop_tile.wgsl's products. The results go
// out in pairs of rows through the store file, which declares Params (rows, cols, row_bytes) and the
// outputs, and defines store_pair. Needs step.wgsl, tile.wgsl, matmul_io.wgsl and
// matmul_coop_tile.wgsl.

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
    @builtin(subgroup_id) sg: u32,
) {
    let tile = plain_tile(wg);
    if (tile.tokens == 0u) {
        return;
    }
    multiply_tile(t, sg, tile);
}

// The experts' products over a prompt's chunk (expert_items.wgsl) in a tile file's products
// (matmul_tile.wgsl, or matmul_rows_tile.wgsl where workgroups run on a CPU). Needs tile.wgsl,
// expert_items.wgsl, tile_x_rows.wgsl and the tile file.

override WG: u32 = 64u; // the tile's threads

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let tile = expert_tile(wg);
    if (tile.tokens == 0u) {
        return;
    }
    list_items(t, wg.z, tile);
    workgroupBarrier();
    multiply_tile(t, tile);
}

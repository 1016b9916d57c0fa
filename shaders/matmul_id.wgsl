// The experts' products over a prompt's chunk (expert_items.wgsl) in matmul_tile.wgsl's tiles. Needs
// expert_items.wgsl and matmul_tile.wgsl.

override WG: u32 = 64u; // the tile's threads (matmul_tile.wgsl)

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let tile = expert_tile(wg);
    if (tile.n == 0u) {
        return;
    }
    list_items(t, wg.z, tile);
    workgroupBarrier();
    let acc = multiply_tile(t, tile.lo, tile.hi, tile.first, tile.n);

    let my_rows = tile_rows(t);
    let my_tokens = tile_tokens(t);
    for (var r = 0u; r < RB; r++) {
        for (var k = 0u; k < 4u; k++) {
            store_item(tile, my_tokens + k, my_rows + r, acc[r][k]);
        }
    }
}

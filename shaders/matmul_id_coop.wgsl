// The experts' products over a prompt's chunk (expert_items.wgsl) on the adapter's matrix cores, in
// matmul_coop_tile.wgsl's products. Needs expert_items.wgsl and matmul_coop_tile.wgsl.

fn store_sums(tile: CoopTile, slot: u32, row: u32, a: f32, b: f32) {
    let e = ExpertTile(tile.row0, tile.token0, tile.tokens, tile.lo, tile.hi, tile.first);
    store_item(e, slot, row, a);
    store_item(e, slot, row + 1u, b);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
    @builtin(subgroup_id) sg: u32,
) {
    let e = expert_tile(wg);
    if (e.n == 0u) {
        return;
    }
    list_items(t, wg.z, e);
    workgroupBarrier();
    multiply_tile(t, sg, CoopTile(e.row0, e.item0, e.n, e.lo, e.hi, e.first));
}

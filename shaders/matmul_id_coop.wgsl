// The experts' products over a prompt's chunk (expert_items.wgsl) on the adapter's matrix cores, in
// matmul_coop_tile.wgsl's products. Needs tile.wgsl, expert_items.wgsl and matmul_coop_tile.wgsl.

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
    @builtin(subgroup_id) sg: u32,
) {
    let tile = expert_tile(wg);
    if (tile.tokens == 0u) {
        return;
    }
    list_items(t, wg.z, tile);
    workgroupBarrier();
    multiply_tile(t, sg, tile);
}

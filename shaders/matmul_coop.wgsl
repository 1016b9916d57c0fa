// X W^T for the tokens of a prompt's chunk on the adapter's matrix cores (cooperative matrices): the
// tile of matmul.wgsl, TM rows of W by TN tokens, in matmul_coop_tile.wgsl's products. The results go
// out in pairs of rows through the store file, which declares Params (rows, cols, row_bytes) and the
// outputs, and defines store_pair. Needs step.wgsl and matmul_coop_tile.wgsl.

@group(0) @binding(0) var<storage, read> W: array<u32>;       // (rows, row_bytes / 4)
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>; // (batch, cols / 4)
@group(0) @binding(2) var<storage, read> step: Step;

fn store_sums(tile: CoopTile, token: u32, row: u32, a: f32, b: f32) {
    if (row < tile.hi) {
        store_pair(tile.token0 + token, tile.row0 + row, a, b);
    }
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
    @builtin(subgroup_id) sg: u32,
) {
    let row0 = wg.x * TM;
    let token0 = wg.y * TN;
    if (token0 >= step.n_tokens) {
        return;
    }
    let tokens = min(TN, step.n_tokens - token0);
    for (var n = t; n < TN; n += WG) {
        x_rows[n] = (token0 + n) * (P.cols / 4u);
    }
    workgroupBarrier();
    multiply_tile(t, sg, CoopTile(row0, token0, tokens, 0u, min(TM, P.rows - row0), row0));
}

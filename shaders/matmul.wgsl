// X W^T for the tokens of a run: the prompt's matrix product, W packed, a workgroup per tile of TM rows
// by TN tokens (matmul_tile.wgsl). The results go out in pairs of rows through the store file, which
// declares Params (with rows, cols and row_bytes) and the outputs, and defines store_pair. Needs
// step.wgsl and matmul_tile.wgsl.

@group(0) @binding(0) var<storage, read> W: array<u32>;            // (rows, row_bytes / 4)
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;      // (batch, cols / 4)
@group(0) @binding(2) var<storage, read> step: Step;

override WG: u32 = 64u; // the tile's threads (matmul_tile.wgsl)

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let row0 = wg.x * TM;
    let token0 = wg.y * TN;
    if (token0 >= step.n_tokens) {
        return;
    }
    let tokens = min(TN, step.n_tokens - token0);
    if (t < TN) {
        x_rows[t] = (token0 + t) * (P.cols / 4u);
    }
    workgroupBarrier();
    let acc = multiply_tile(t, 0u, min(TM, P.rows - row0), row0, tokens);

    // Rows my_rows + r and r + 1, r even, are pairs: the tile and each thread's block start even.
    let my_rows = tile_rows(t);
    let my_tokens = tile_tokens(t);
    for (var r = 0u; r < RB; r += 2u) {
        let row = row0 + my_rows + r;
        for (var n = 0u; n < 4u; n++) {
            let token = my_tokens + n;
            if (row < P.rows && token < tokens) {
                store_pair(token0 + token, row, acc[r][n], acc[r + 1u][n]);
            }
        }
    }
}

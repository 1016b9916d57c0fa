// X W^T for the tokens of a run: the prompt's matrix product, W packed. A workgroup computes a tile of
// TM rows of W by TN tokens. Per 32-weight step along the rows, each of its 64 threads dequantizes one
// row's chunk into workgroup memory (once for TN tokens, where a matvec would do it once per token), the
// threads load the TN tokens' matching x, and then each thread accumulates a 4-row by 4-token block of
// the tile from there. The results go out in pairs of rows through the store file, which declares
// Params (with rows, cols and row_bytes) and the outputs, and defines store_pair. Needs step.wgsl.

@group(0) @binding(0) var<storage, read> W: array<u32>;            // (rows, row_bytes / 4)
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;      // (batch, cols / 4)
@group(0) @binding(2) var<storage, read> step: Step;

override WG: u32 = 64u; // must be 64: the tile's shape below assumes it
const TM: u32 = 64u;    // rows per tile: one per thread when dequantizing
const TN: u32 = 16u;    // tokens per tile
const SUBS: u32 = BLOCK_LEN / 32u;

var<workgroup> w_tile: array<vec4<f32>, 512>; // [8 vec4 of one 32-weight step][TM rows]
var<workgroup> x_tile: array<vec4<f32>, 128>; // [8 vec4][TN tokens]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let row0 = wg.x * TM;
    let token0 = wg.y * TN;
    if (token0 >= step.n_tokens) {
        return;
    }
    let tokens = min(TN, step.n_tokens - token0);
    let my_rows = (t % 16u) * 4u; // this thread's 4 rows and 4 tokens within the tile
    let my_tokens = (t / 16u) * 4u;
    let x_stride = P.cols / 4u;
    var acc: array<vec4<f32>, 4>; // acc[r][n]: row my_rows + r, token my_tokens + n

    for (var c = 0u; c < P.cols / 32u; c++) {
        // This thread's row: its 32 weights of step c, dequantized.
        let row = row0 + t;
        if (row < P.rows) {
            let w = dequant32(row * P.row_bytes + (c / SUBS) * BLOCK_BYTES, c % SUBS);
            for (var i = 0u; i < 8u; i++) {
                w_tile[i * TM + t] = w[i];
            }
        } else {
            for (var i = 0u; i < 8u; i++) {
                w_tile[i * TM + t] = vec4<f32>(0.0);
            }
        }
        // The tokens' x for the same 32 columns: 8 vec4 per token, two per thread.
        for (var j = t; j < 8u * TN; j += WG) {
            let n = j / 8u;
            let i = j % 8u;
            var x = vec4<f32>(0.0);
            if (n < tokens) {
                x = X[(token0 + n) * x_stride + c * 8u + i];
            }
            x_tile[i * TN + n] = x;
        }
        workgroupBarrier();
        for (var i = 0u; i < 8u; i++) {
            let x0 = x_tile[i * TN + my_tokens];
            let x1 = x_tile[i * TN + my_tokens + 1u];
            let x2 = x_tile[i * TN + my_tokens + 2u];
            let x3 = x_tile[i * TN + my_tokens + 3u];
            for (var r = 0u; r < 4u; r++) {
                let w = w_tile[i * TM + my_rows + r];
                acc[r] += vec4<f32>(dot(w, x0), dot(w, x1), dot(w, x2), dot(w, x3));
            }
        }
        workgroupBarrier();
    }

    // Rows my_rows + (0, 1) and + (2, 3) are pairs: the tile and each thread's block start even.
    for (var r = 0u; r < 4u; r += 2u) {
        let row = row0 + my_rows + r;
        for (var n = 0u; n < 4u; n++) {
            let token = my_tokens + n;
            if (row < P.rows && token < tokens) {
                store_pair(token0 + token, row, acc[r][n], acc[r + 1u][n]);
            }
        }
    }
}

// The tile product the matmul kernels share: a workgroup of 64 threads computes TM rows of W by TN
// tokens of X. Per 32-weight step along the rows, each thread dequantizes one row's chunk into
// workgroup memory (once for TN tokens, where a matvec would do it once per token), the threads load the
// tokens' matching x, and then each thread accumulates a 4-row by 4-token block of the tile from there.
// The kernel declares W, X and P (with cols and row_bytes), and fills x_rows before calling.

const TM: u32 = 64u;    // rows per tile: one per thread when dequantizing
const TN: u32 = 16u;    // tokens per tile
const SUBS: u32 = BLOCK_LEN / 32u;

var<workgroup> w_tile: array<vec4<f32>, 512>; // [8 vec4 of one 32-weight step][TM rows]
var<workgroup> x_tile: array<vec4<f32>, 128>; // [8 vec4][TN tokens]
var<workgroup> x_rows: array<u32, TN>;        // the vec4 where each token's row of X starts

// Thread t's rows of the tile, (t % 16) * 4 + r, and its tokens, (t / 16) * 4 + n.
fn tile_rows(t: u32) -> u32 {
    return (t % 16u) * 4u;
}

fn tile_tokens(t: u32) -> u32 {
    return (t / 16u) * 4u;
}

// acc[r][n] for thread t's 4 rows and 4 tokens: tile row j in [lo, hi) is the bound W's row
// first + j - lo, other rows are zero; tokens past `tokens` are zero. Call from uniform control flow.
fn multiply_tile(t: u32, lo: u32, hi: u32, first: u32, tokens: u32) -> array<vec4<f32>, 4> {
    let my_rows = tile_rows(t);
    let my_tokens = tile_tokens(t);
    var acc: array<vec4<f32>, 4>;
    for (var c = 0u; c < P.cols / 32u; c++) {
        // This thread's row: its 32 weights of step c, dequantized.
        if (t >= lo && t < hi) {
            let row = first + t - lo;
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
        for (var j = t; j < 8u * TN; j += 64u) {
            let n = j / 8u;
            let i = j % 8u;
            var x = vec4<f32>(0.0);
            if (n < tokens) {
                x = X[x_rows[n] + c * 8u + i];
            }
            x_tile[i * TN + n] = x;
        }
        workgroupBarrier();
        // Threads whose tokens are all past the run's have nothing to add (a run of a few tokens: a
        // decode step of parallel sequences).
        for (var i = 0u; i < 8u && my_tokens < tokens; i++) {
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
    return acc;
}

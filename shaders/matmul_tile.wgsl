// The tile product the matmul kernels share on GPUs: a workgroup of WG threads computes TM rows of W
// by TN tokens of X. Per 32-weight step along the rows, the threads dequantize the rows' chunks into
// workgroup memory (WG / TM threads a row; once for TN tokens, where a matvec would do it once per
// token), load the tokens' matching x, and then each thread accumulates an RB-row by 4-token block of
// the tile from there. The source starts with TM, TN and RB (`PipelineKey::source`: 64 threads take
// 64 x 16, 4 rows each; 256 take 128 x 64, 8 rows each, for GPUs), so that (TM / RB) * (TN / 4) is
// WG. The kernel declares W, X and P (with cols and row_bytes) and the interface of tile.wgsl, and
// includes a tile_x file (tile_x_rows.wgsl, or tile_x_rms_norm.wgsl to norm x on the way in). A
// tile_f32 or tile_f16 file says how the tile holds a vec4 in workgroup memory (TileVec, to_tile and
// from_tile); the sums stay f32.

const SUBS: u32 = BLOCK_LEN / 32u;

var<workgroup> w_tile: array<TileVec, 8u * TM>; // [8 vec4 of one 32-weight step][TM slots]
var<workgroup> x_tile: array<TileVec, 8u * TN>; // [8 vec4][TN tokens]

// The loads of x a thread makes a step: 8 TN / WG, as WG is (TM / RB) * (TN / 4).
const X_LOADS: u32 = 32u * RB / TM;

// Thread t's rows of the tile, tile_rows(t) + r, and its tokens, tile_tokens(t) + n.
fn tile_rows(t: u32) -> u32 {
    return (t % (TM / RB)) * RB;
}

fn tile_tokens(t: u32) -> u32 {
    return (t / (TM / RB)) * 4u;
}

// Where tile row j's weights lie in w_tile: row r of each thread's block is slot r * (TM / RB) + the
// thread's place, so that neighbouring threads read neighbouring vec4s (in their RB-row blocks, they
// would read vec4s RB apart, which a GPU's banks of workgroup memory serve one at a time). The
// threads that dequantize store slot by slot instead, once per step.
fn tile_slot(j: u32) -> u32 {
    return (j % RB) * (TM / RB) + j / RB;
}

fn slot_row(s: u32) -> u32 {
    return (s % (TM / RB)) * RB + s / (TM / RB);
}

// The tile's products, handed to store_sums: thread t's block of RB rows by 4 tokens. Rows outside
// [lo, hi) are zero.
fn multiply_tile(t: u32, tile: Tile) {
    let my_rows = tile_rows(t);
    let my_tokens = tile_tokens(t);
    // The row this thread dequantizes (into slot t % TM), and which of its step's 8 vec4 it keeps.
    let slot = t % TM;
    let j = slot_row(slot);
    let per_thread = 8u / (WG / TM);
    let kept = (t / TM) * per_thread;
    var acc: array<vec4<f32>, RB>;
    var squares: array<f32, X_LOADS>;
    for (var c = 0u; c < P.cols / 32u; c++) {
        if (j >= tile.lo && j < tile.hi) {
            let row = tile.first + j - tile.lo;
            var w = dequant32(row * P.row_bytes + (c / SUBS) * BLOCK_BYTES, c % SUBS);
            for (var i = kept; i < kept + per_thread; i++) {
                w_tile[i * TM + slot] = to_tile(w[i]);
            }
        } else {
            for (var i = kept; i < kept + per_thread; i++) {
                w_tile[i * TM + slot] = to_tile(vec4<f32>(0.0));
            }
        }
        // The tokens' x for the same 32 columns: 8 vec4 per token.
        for (var k = t; k < 8u * TN; k += WG) {
            let n = k / 8u;
            let i = k % 8u;
            var x = vec4<f32>(0.0);
            if (n < tile.tokens) {
                x = X[x_start(tile, n) + c * 8u + i];
                squares[k / WG] += dot(x, x);
                x *= tile_gain(c * 8u + i);
            }
            x_tile[i * TN + n] = to_tile(x);
        }
        workgroupBarrier();
        // Threads whose tokens are all past the run's have nothing to add (a run of a few tokens: a
        // decode step of parallel sequences).
        for (var i = 0u; i < 8u && my_tokens < tile.tokens; i++) {
            let x0 = from_tile(x_tile[i * TN + my_tokens]);
            let x1 = from_tile(x_tile[i * TN + my_tokens + 1u]);
            let x2 = from_tile(x_tile[i * TN + my_tokens + 2u]);
            let x3 = from_tile(x_tile[i * TN + my_tokens + 3u]);
            for (var r = 0u; r < RB; r++) {
                let w = from_tile(w_tile[i * TM + tile_slot(my_rows + r)]);
                acc[r] += vec4<f32>(dot(w, x0), dot(w, x1), dot(w, x2), dot(w, x3));
            }
        }
        workgroupBarrier();
    }
    // Where x is normed on the way in, each of this thread's tokens' sums of squares, from the
    // threads that loaded its x: load k (token k / 8, vec4 k % 8 of each step) leaves its sum in
    // x_tile[k], free since the last step's barrier. (Never in an f16 tile, which they would
    // overflow: `PipelineKey::source`.)
    var scale = vec4<f32>(1.0);
    if (X_NORMED) {
        for (var m = 0u; m < X_LOADS; m++) {
            x_tile[t + m * WG] = to_tile(vec4<f32>(squares[m]));
        }
        workgroupBarrier();
        for (var n = 0u; n < 4u; n++) {
            var sum = 0.0;
            for (var i = 0u; i < 8u; i++) {
                sum += from_tile(x_tile[(my_tokens + n) * 8u + i]).x;
            }
            scale[n] = tile_scale(sum);
        }
    }
    // Rows my_rows + r and r + 1, r even, are pairs: the tile and each thread's block start even.
    for (var r = 0u; r < RB; r += 2u) {
        for (var n = 0u; n < 4u; n++) {
            if (my_tokens + n < tile.tokens) {
                let s = scale[n];
                store_sums(tile, my_tokens + n, my_rows + r, acc[r][n] * s, acc[r + 1u][n] * s);
            }
        }
    }
}

// The tile product in registers, for adapters that run a workgroup's threads as the lanes of a CPU's
// SIMD registers (lavapipe, SwiftShader). There every load whose address differs from lane to lane is
// a load per lane, and workgroup memory is no cheaper than the buffers: matmul_tile.wgsl's threads,
// which read both operands from workgroup memory, spend most of their time loading. Here a thread
// holds RB rows of W, dequantized 32 weights at a time into its own registers, and walks all the
// tile's tokens, each x read once for its RB rows. A workgroup is one SIMD group of TM / RB threads;
// no workgroup memory, no barriers. The source starts with TM, TN and RB; the kernel declares W, X
// and P (with cols and row_bytes) and the interface of tile.wgsl, and includes a tile_x file
// (tile_x_rows.wgsl, or tile_x_rms_norm.wgsl to norm x on the way in).

const SUBS: u32 = BLOCK_LEN / 32u;

// The tile's products, handed to store_sums: thread t's rows are RB * t and on. A row past hi reads
// the last row inside, and is the kernel's to skip.
fn multiply_tile(t: u32, tile: Tile) {
    let first = RB * t;
    // By token, so that a token's RB sums are one array in the loop that walks x.
    var acc: array<array<f32, RB>, TN>;
    // Each token's sum of the squares of its x, where x is normed on the way in.
    var squares: array<f32, TN>;
    var row_at: array<u32, RB>; // where each row's bytes start
    for (var r = 0u; r < RB; r++) {
        row_at[r] = (tile.first + clamp(first + r, tile.lo, tile.hi - 1u) - tile.lo) * P.row_bytes;
    }
    for (var c = 0u; c < P.cols / 32u; c++) {
        var w: array<array<vec4<f32>, 8>, RB>;
        for (var r = 0u; r < RB; r++) {
            w[r] = dequant32(row_at[r] + (c / SUBS) * BLOCK_BYTES, c % SUBS);
        }
        for (var n = 0u; n < tile.tokens; n++) {
            let x0 = x_start(tile, n) + c * 8u;
            var sums = acc[n];
            var square = 0.0;
            for (var i = 0u; i < 8u; i++) {
                let read = X[x0 + i];
                square += dot(read, read);
                let x = read * tile_gain(c * 8u + i);
                for (var r = 0u; r < RB; r++) {
                    sums[r] += dot(w[r][i], x);
                }
            }
            acc[n] = sums;
            squares[n] += square;
        }
    }
    // RB is even.
    for (var n = 0u; n < tile.tokens; n++) {
        let s = tile_scale(squares[n]);
        for (var r = 0u; r < RB; r += 2u) {
            store_sums(tile, n, first + r, acc[n][r] * s, acc[n][r + 1u] * s);
        }
    }
}

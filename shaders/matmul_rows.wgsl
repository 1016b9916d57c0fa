// X W^T for the tokens of a run, as matmul.wgsl, in the form for adapters that run a workgroup's
// threads as the lanes of a CPU's SIMD registers (lavapipe, SwiftShader). There every load whose
// address differs from lane to lane is a load per lane, and workgroup memory is no cheaper than the
// buffers: the tile's threads, which read both operands from workgroup memory, spend most of their
// time loading. Here a thread holds RB rows of W, dequantized 32 weights at a time into its own
// registers, and walks the tile's tokens, each x read once for RB rows' dot products. A workgroup is
// one SIMD group of TM / RB threads; no workgroup memory, no barriers. The tile (TM rows by TN tokens)
// and RB come first in the source; the store file declares Params (with rows, cols and row_bytes) and
// the outputs, and defines store_pair. Needs step.wgsl.

@group(0) @binding(0) var<storage, read> W: array<u32>;            // (rows, row_bytes / 4)
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;      // (batch, cols / 4)
@group(0) @binding(2) var<storage, read> step: Step;

override WG: u32 = 8u; // TM / RB

const SUBS: u32 = BLOCK_LEN / 32u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let token0 = wg.y * TN;
    if (token0 >= step.n_tokens) {
        return;
    }
    let tokens = min(TN, step.n_tokens - token0);
    // This thread's rows first..first + RB; past the last row it reads the last one, and stores nothing.
    let first = wg.x * TM + RB * t;
    var acc: array<array<f32, RB>, TN>;
    for (var c = 0u; c < P.cols / 32u; c++) {
        var w: array<array<vec4<f32>, 8>, RB>;
        for (var r = 0u; r < RB; r++) {
            let row = min(first + r, P.rows - 1u);
            w[r] = dequant32(row * P.row_bytes + (c / SUBS) * BLOCK_BYTES, c % SUBS);
        }
        for (var n = 0u; n < tokens; n++) {
            let x0 = (token0 + n) * (P.cols / 4u) + c * 8u;
            var sums = acc[n];
            for (var i = 0u; i < 8u; i++) {
                let x = X[x0 + i];
                for (var r = 0u; r < RB; r++) {
                    sums[r] += dot(w[r][i], x);
                }
            }
            acc[n] = sums;
        }
    }
    // Rows first + r and r + 1, r even, are pairs: RB and the tile are even.
    for (var n = 0u; n < tokens; n++) {
        for (var r = 0u; r < RB; r += 2u) {
            if (first + r < P.rows) {
                store_pair(token0 + n, first + r, acc[n][r], acc[n][r + 1u]);
            }
        }
    }
}

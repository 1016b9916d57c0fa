// What the matvec kernels share: one packed row's dot product with X, split over the TPR threads of a
// row. The kernel declares X, TPR and WG; the dequant file gives BLOCK_LEN, BLOCK_BYTES and dequant32.
// The threads' parts are summed by row_sum, from row_sum.wgsl or row_sum_subgroup.wgsl.

const SUBS: u32 = BLOCK_LEN / 32u;

// This thread's part of dot(W row at byte `base`, X from vec4 `x0`): chunks lane, lane + TPR, ...
fn row_dot(base: u32, x0: u32, cols: u32, lane: u32) -> f32 {
    var acc = 0.0;
    for (var c = lane; c < cols / 32u; c += TPR) {
        let w = dequant32(base + (c / SUBS) * BLOCK_BYTES, c % SUBS);
        for (var i = 0u; i < 8u; i++) {
            acc += dot(w[i], X[x0 + c * 8u + i]);
        }
    }
    return acc;
}

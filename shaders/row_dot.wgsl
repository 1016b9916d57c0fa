// What the matvec kernels share: one packed row's dot product with X, split over the TPR threads of a
// row, and the reduction of those threads' parts. The kernel declares X, TPR and WG; the dequant file
// gives BLOCK_LEN, BLOCK_BYTES and dequant32.

const SUBS: u32 = BLOCK_LEN / 32u;
var<workgroup> partial: array<f32, 256>;

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

// The sum of `v` over the TPR threads of the row thread t works on, in every one of them. Call from
// uniform control flow.
fn row_sum(t: u32, v: f32) -> f32 {
    let lane = t % TPR;
    partial[t] = v;
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            partial[t] += partial[t + s];
        }
        workgroupBarrier();
    }
    return partial[t - lane];
}

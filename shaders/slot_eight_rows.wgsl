// What a slot of a row's TPR threads takes of a run of several tokens in shaders/matvec_pairs.wgsl:
// four pairs of rows, eight (`MatvecKernel::eight_rows`), where slot_pair.wgsl takes one.

// The products of the eight rows from row 8 * slot with the four tokens' x from vec4s x0, summed over
// the slot's threads and stored: each x read once for the eight rows, where a slot of one pair reads
// it again for every pair. Where a workgroup's threads run as a CPU's SIMD lanes, each loading x
// lane by lane, x's loads are most of a product's time. The slot's threads split the rows by 32-weight
// chunks as row_dot.wgsl does. The rows are written out with constant indices, which such a compiler
// keeps in registers, where a loop over rows and vec4s left them in memory (2-4x slower on lavapipe).
fn slot_four_tokens(token0: u32, x0: vec4<u32>, slot: u32, t: u32) {
    let rows = array<u32, 8>(row_at(slot, 0u), row_at(slot, 1u), row_at(slot, 2u), row_at(slot, 3u),
                             row_at(slot, 4u), row_at(slot, 5u), row_at(slot, 6u), row_at(slot, 7u));
    // [token][row]: rows 0 to 3, and 4 to 7.
    var lo = mat4x4<f32>();
    var hi = mat4x4<f32>();
    let subs = BLOCK_LEN / 32u;
    for (var c = t % TPR; c < P.cols / 32u; c += TPR) {
        let at = (c / subs) * BLOCK_BYTES;
        let j = c * 8u;
        let xs = array<mat4x4<f32>, 8>(x4_at(x0, j), x4_at(x0, j + 1u), x4_at(x0, j + 2u),
            x4_at(x0, j + 3u), x4_at(x0, j + 4u), x4_at(x0, j + 5u), x4_at(x0, j + 6u), x4_at(x0, j + 7u));
        let w0 = dequant32(rows[0] + at, c % subs);
        let w1 = dequant32(rows[1] + at, c % subs);
        let w2 = dequant32(rows[2] + at, c % subs);
        let w3 = dequant32(rows[3] + at, c % subs);
        lo += rows4(w0[0], w1[0], w2[0], w3[0], xs[0]) + rows4(w0[1], w1[1], w2[1], w3[1], xs[1])
            + rows4(w0[2], w1[2], w2[2], w3[2], xs[2]) + rows4(w0[3], w1[3], w2[3], w3[3], xs[3])
            + rows4(w0[4], w1[4], w2[4], w3[4], xs[4]) + rows4(w0[5], w1[5], w2[5], w3[5], xs[5])
            + rows4(w0[6], w1[6], w2[6], w3[6], xs[6]) + rows4(w0[7], w1[7], w2[7], w3[7], xs[7]);
        let w4 = dequant32(rows[4] + at, c % subs);
        let w5 = dequant32(rows[5] + at, c % subs);
        let w6 = dequant32(rows[6] + at, c % subs);
        let w7 = dequant32(rows[7] + at, c % subs);
        hi += rows4(w4[0], w5[0], w6[0], w7[0], xs[0]) + rows4(w4[1], w5[1], w6[1], w7[1], xs[1])
            + rows4(w4[2], w5[2], w6[2], w7[2], xs[2]) + rows4(w4[3], w5[3], w6[3], w7[3], xs[3])
            + rows4(w4[4], w5[4], w6[4], w7[4], xs[4]) + rows4(w4[5], w5[5], w6[5], w7[5], xs[5])
            + rows4(w4[6], w5[6], w6[6], w7[6], xs[6]) + rows4(w4[7], w5[7], w6[7], w7[7], xs[7]);
    }
    // Each pair's sums over the slot's threads, in pair_dot4's order; a pair's are read before the
    // next pair's are written.
    let s0 = pair_sum4(t, array<vec4<f32>, 2>(vec4<f32>(lo[0].xy, lo[1].xy), vec4<f32>(lo[2].xy, lo[3].xy)));
    workgroupBarrier();
    let s1 = pair_sum4(t, array<vec4<f32>, 2>(vec4<f32>(lo[0].zw, lo[1].zw), vec4<f32>(lo[2].zw, lo[3].zw)));
    workgroupBarrier();
    let s2 = pair_sum4(t, array<vec4<f32>, 2>(vec4<f32>(hi[0].xy, hi[1].xy), vec4<f32>(hi[2].xy, hi[3].xy)));
    workgroupBarrier();
    let s3 = pair_sum4(t, array<vec4<f32>, 2>(vec4<f32>(hi[0].zw, hi[1].zw), vec4<f32>(hi[2].zw, hi[3].zw)));
    let scale = x_scale4(t, P.cols);
    store_four(token0, 4u * slot, s0, scale, t);
    store_four(token0, 4u * slot + 1u, s1, scale, t);
    store_four(token0, 4u * slot + 2u, s2, scale, t);
    store_four(token0, 4u * slot + 3u, s3, scale, t);
}

// Where row k of a slot of eight starts: a row past the matrix reads its last, whose sums for it
// are not stored.
fn row_at(slot: u32, k: u32) -> u32 {
    return min(8u * slot + k, P.rows - 1u) * P.row_bytes;
}

// Four rows' products with four tokens' x: rows a, b, c, d (a vec4 of weights each) by x's columns
// (a vec4 of each token), [token][row].
fn rows4(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, d: vec4<f32>, x: mat4x4<f32>) -> mat4x4<f32> {
    return transpose(mat4x4<f32>(a, b, c, d)) * x;
}

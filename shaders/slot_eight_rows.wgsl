// What a slot of a row's TPR threads takes of a run of several tokens in shaders/matvec_pairs.wgsl:
// four pairs of rows, eight (`MatvecKernel::eight_rows`), where slot_pair.wgsl takes one. Needs a
// walk file, which defines eight_rows_dot4.

// The products of the eight rows from row 8 * slot with the four tokens' x from vec4s x0, summed over
// the slot's threads and stored: each x read once for the eight rows, where a slot of one pair reads
// it again for every pair. Where a workgroup's threads run as a CPU's SIMD lanes, each loading x
// lane by lane, x's loads are most of a product's time. How the slot's threads split the rows is the
// walk file's (`eight_rows_dot4`: eight_rows_chunks.wgsl, eight_rows_parts.wgsl).
fn slot_four_tokens(token0: u32, x0: vec4<u32>, slot: u32, t: u32) {
    let rows = array<u32, 8>(row_at(slot, 0u), row_at(slot, 1u), row_at(slot, 2u), row_at(slot, 3u),
                             row_at(slot, 4u), row_at(slot, 5u), row_at(slot, 6u), row_at(slot, 7u));
    // [token][row]: rows 0 to 3, and 4 to 7.
    let sums = eight_rows_dot4(rows, x0, t % TPR);
    let lo = sums[0];
    let hi = sums[1];
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

// Four rows' products with 8 vec4s of four tokens' x: w_r[i] of row r by xs[i], summed, [token][row].
// The rows and vec4s are written out with constant indices, which a CPU-backed compiler keeps in
// registers, where a loop over rows and vec4s left them in memory (2-4x slower on lavapipe).
fn rows4_step(w0: array<vec4<f32>, 8>, w1: array<vec4<f32>, 8>, w2: array<vec4<f32>, 8>,
              w3: array<vec4<f32>, 8>, xs: array<mat4x4<f32>, 8>) -> mat4x4<f32> {
    return rows4(w0[0], w1[0], w2[0], w3[0], xs[0]) + rows4(w0[1], w1[1], w2[1], w3[1], xs[1])
        + rows4(w0[2], w1[2], w2[2], w3[2], xs[2]) + rows4(w0[3], w1[3], w2[3], w3[3], xs[3])
        + rows4(w0[4], w1[4], w2[4], w3[4], xs[4]) + rows4(w0[5], w1[5], w2[5], w3[5], xs[5])
        + rows4(w0[6], w1[6], w2[6], w3[6], xs[6]) + rows4(w0[7], w1[7], w2[7], w3[7], xs[7]);
}

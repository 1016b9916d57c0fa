// What the matvec kernels share: one packed row's dot product with X (or a pair of rows' with the same
// X), split over the TPR threads of a row. The kernel declares X, TPR and WG; the dequant file gives
// BLOCK_LEN, BLOCK_BYTES and dequant32. The threads' parts are summed by row_sum or pair_sum, from
// row_sum.wgsl or row_sum_subgroup.wgsl. x is read through the x file's x_at and x4_at (as it is, or
// normed on the way in). This file splits a row by 32-weight chunks: thread `lane`
// takes chunks lane, lane + TPR, ...; row_dot_blocks.wgsl is the same functions by whole blocks.

const SUBS: u32 = BLOCK_LEN / 32u;

// This thread's part of dot(W row at byte `base`, X from vec4 `x0`).
fn row_dot(base: u32, x0: u32, cols: u32, lane: u32) -> f32 {
    var acc = 0.0;
    for (var c = lane; c < cols / 32u; c += TPR) {
        let w = dequant32(base + (c / SUBS) * BLOCK_BYTES, c % SUBS);
        for (var i = 0u; i < 8u; i++) {
            acc += dot(w[i], x_at(x0, c * 8u + i));
        }
    }
    return acc;
}

// This thread's part of the dot products of the rows at bytes `base` and `base + row_bytes` with the
// same X, each x read once for both.
fn pair_dot(base: u32, row_bytes: u32, x0: u32, cols: u32, lane: u32) -> vec2<f32> {
    var acc = vec2<f32>(0.0);
    for (var c = lane; c < cols / 32u; c += TPR) {
        let at = (c / SUBS) * BLOCK_BYTES;
        let w0 = dequant32(base + at, c % SUBS);
        let w1 = dequant32(base + row_bytes + at, c % SUBS);
        for (var i = 0u; i < 8u; i++) {
            let x = x_at(x0, c * 8u + i);
            acc += vec2<f32>(dot(w0[i], x), dot(w1[i], x));
        }
    }
    return acc;
}

// pair_dot for the four rows from byte `base`, `row_bytes` apart: two pairs, each x read once for
// the four.
fn quad_dot(base: u32, row_bytes: u32, x0: u32, cols: u32, lane: u32) -> vec4<f32> {
    var acc = vec4<f32>(0.0);
    for (var c = lane; c < cols / 32u; c += TPR) {
        let at = base + (c / SUBS) * BLOCK_BYTES;
        let w0 = dequant32(at, c % SUBS);
        let w1 = dequant32(at + row_bytes, c % SUBS);
        let w2 = dequant32(at + 2u * row_bytes, c % SUBS);
        let w3 = dequant32(at + 3u * row_bytes, c % SUBS);
        for (var i = 0u; i < 8u; i++) {
            let x = x_at(x0, c * 8u + i);
            acc += vec4<f32>(dot(w0[i], x), dot(w1[i], x), dot(w2[i], x), dot(w3[i], x));
        }
    }
    return acc;
}

// pair_dot for four tokens, whose x start at vec4s x0.x, .y, .z, .w: each weight dequantized once
// for the four. Returns (token 0's two rows, token 1's), (token 2's, token 3's).
fn pair_dot4(base: u32, row_bytes: u32, x0: vec4<u32>, cols: u32, lane: u32) -> array<vec4<f32>, 2> {
    var a01 = vec4<f32>(0.0);
    var a23 = vec4<f32>(0.0);
    for (var c = lane; c < cols / 32u; c += TPR) {
        let at = (c / SUBS) * BLOCK_BYTES;
        let w0 = dequant32(base + at, c % SUBS);
        let w1 = dequant32(base + row_bytes + at, c % SUBS);
        for (var i = 0u; i < 8u; i++) {
            let xs = x4_at(x0, c * 8u + i);
            let x = xs[0];
            let y = xs[1];
            let z = xs[2];
            let v = xs[3];
            a01 += vec4<f32>(dot(w0[i], x), dot(w1[i], x), dot(w0[i], y), dot(w1[i], y));
            a23 += vec4<f32>(dot(w0[i], z), dot(w1[i], z), dot(w0[i], v), dot(w1[i], v));
        }
    }
    return array<vec4<f32>, 2>(a01, a23);
}

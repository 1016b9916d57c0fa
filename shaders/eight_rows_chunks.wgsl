// How slot_eight_rows.wgsl's slot of TPR threads splits its eight rows: by 32-weight chunks, thread
// `lane` taking chunks lane, lane + TPR, ... as row_dot.wgsl does (dequant32).

// The slot's eight rows (starting at byte offsets `rows`) by the four tokens' x from vec4s x0, this
// thread's chunks: [token][row] of rows 0 to 3, then 4 to 7.
fn eight_rows_dot4(rows: array<u32, 8>, x0: vec4<u32>, lane: u32) -> array<mat4x4<f32>, 2> {
    var lo = mat4x4<f32>();
    var hi = mat4x4<f32>();
    let subs = BLOCK_LEN / 32u;
    for (var c = lane; c < P.cols / 32u; c += TPR) {
        let at = (c / subs) * BLOCK_BYTES;
        let s = c % subs;
        let j = c * 8u;
        let xs = array<mat4x4<f32>, 8>(x4_at(x0, j), x4_at(x0, j + 1u), x4_at(x0, j + 2u),
            x4_at(x0, j + 3u), x4_at(x0, j + 4u), x4_at(x0, j + 5u), x4_at(x0, j + 6u), x4_at(x0, j + 7u));
        lo += rows4_step(dequant32(rows[0] + at, s), dequant32(rows[1] + at, s),
                         dequant32(rows[2] + at, s), dequant32(rows[3] + at, s), xs);
        hi += rows4_step(dequant32(rows[4] + at, s), dequant32(rows[5] + at, s),
                         dequant32(rows[6] + at, s), dequant32(rows[7] + at, s), xs);
    }
    return array<mat4x4<f32>, 2>(lo, hi);
}

// How slot_eight_rows.wgsl's slot of TPR threads splits its eight rows: by blocks' parts, as
// row_dot_parts.wgsl does, for the wide parts of 8 vec4s (PART_X4 8: a quantized type's part loaded
// as vec4s, `MatvecKernel::wide`): TPR / PARTS groups, group g taking blocks g, g + TPR / PARTS, ...,
// and thread `part` of a group its part of each (block_part), where a chunk's walk reads every 32
// weights' words and header anew. Each x is still read once for the eight rows.

// The slot's eight rows (starting at byte offsets `rows`) by the four tokens' x from vec4s x0, this
// thread's parts: [token][row] of rows 0 to 3, then 4 to 7.
fn eight_rows_dot4(rows: array<u32, 8>, x0: vec4<u32>, lane: u32) -> array<mat4x4<f32>, 2> {
    var lo = mat4x4<f32>();
    var hi = mat4x4<f32>();
    let part = lane % PARTS;
    for (var blk = lane / PARTS; blk < P.cols / BLOCK_LEN; blk += TPR / PARTS) {
        let at = blk * BLOCK_BYTES;
        let j = blk * BLOCK_X4;
        let xs = array<mat4x4<f32>, 8>(x4_at(x0, j + part_x4(part, 0u)),
            x4_at(x0, j + part_x4(part, 1u)), x4_at(x0, j + part_x4(part, 2u)),
            x4_at(x0, j + part_x4(part, 3u)), x4_at(x0, j + part_x4(part, 4u)),
            x4_at(x0, j + part_x4(part, 5u)), x4_at(x0, j + part_x4(part, 6u)),
            x4_at(x0, j + part_x4(part, 7u)));
        lo += rows4_step(block_part(rows[0] + at, part), block_part(rows[1] + at, part),
                         block_part(rows[2] + at, part), block_part(rows[3] + at, part), xs);
        hi += rows4_step(block_part(rows[4] + at, part), block_part(rows[5] + at, part),
                         block_part(rows[6] + at, part), block_part(rows[7] + at, part), xs);
    }
    return array<mat4x4<f32>, 2>(lo, hi);
}

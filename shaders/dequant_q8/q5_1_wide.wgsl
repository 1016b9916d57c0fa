// Q5_1 on 8-bit x (row_dot_q8.wgsl, block32_wide.wgsl), beside dequant/q5_1_wide.wgsl: the block's
// m times the sum of its x (m d_x times the sum of x's quants) beside d times the dot product.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let h = q5_1_head(b);
    let q = fifth_bit_bytes(words4(body_at(b) / 4u), h.qh);
    let xs = xd[x_blk];
    return h.dm.x * xs.x * f32(block32_dot(q[0], q[1], x_blk)) + h.dm.y * xs.y;
}

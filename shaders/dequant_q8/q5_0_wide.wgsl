// Q5_0 on 8-bit x (row_dot_q8.wgsl, block32_wide.wgsl), beside dequant/q5_0_wide.wgsl.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let h = q5_head(b);
    let q = fifth_bit_bytes(words4(body_at(b) / 4u), h.qh);
    let dot = block32_dot(centered_bytes4(q[0], 16u), centered_bytes4(q[1], 16u), x_blk);
    return h.d * xd[x_blk].x * f32(dot);
}

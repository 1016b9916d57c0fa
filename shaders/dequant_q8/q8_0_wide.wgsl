// Q8_0 on 8-bit x (row_dot_q8.wgsl, block32_wide.wgsl), beside dequant/q8_0_wide.wgsl.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let at = body_at(b) / 4u;
    let dot = block32_dot(words4(at), words4(at + 4u), x_blk);
    return w_f16(head_at(b)) * xd[x_blk].x * f32(dot);
}

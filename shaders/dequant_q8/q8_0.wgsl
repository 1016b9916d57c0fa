// Q8_0 on 8-bit x (row_dot_q8.wgsl, blocks32.wgsl), beside dequant/q8_0.wgsl.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let x = x8_pair(x_blk, 2u * part);
    let xs = xd[x_blk];
    let d = w_f16(head_at(b));
    let at = body_at(b) + 4u * part;
    return d * xs.x * f32(dot4I8Packed(w_u32(at), x.x) + dot4I8Packed(w_u32(at + 16u), x.y));
}

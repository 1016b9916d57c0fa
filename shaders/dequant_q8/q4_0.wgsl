// Q4_0 on 8-bit x (row_dot_q8.wgsl, blocks32.wgsl), beside dequant/q4_0.wgsl.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let x = x8_pair(x_blk, 2u * part);
    let xs = xd[x_blk];
    let d = w_f16(head_at(b));
    let q = w_u32(body_at(b) + 4u * part);
    let lo = centered_bytes(q & 0x0f0f0f0fu, 8u);
    let hi = centered_bytes((q >> 4u) & 0x0f0f0f0fu, 8u);
    return d * xs.x * f32(dot4I8Packed(lo, x.x) + dot4I8Packed(hi, x.y));
}

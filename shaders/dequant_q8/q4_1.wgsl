// Q4_1 on 8-bit x (row_dot_q8.wgsl, blocks32.wgsl), beside dequant/q4_1.wgsl.

// The block's m times the sum of its x (m d_x times the sum of x's quants) comes once, with part 0.
fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let x = x8_pair(x_blk, 2u * part);
    let xs = xd[x_blk];
    let dm = unpack2x16float(w_u32(head_at(b)));
    let q = w_u32(body_at(b) + 4u * part);
    let i = dot4I8Packed(q & 0x0f0f0f0fu, x.x) + dot4I8Packed((q >> 4u) & 0x0f0f0f0fu, x.y);
    return dm.x * xs.x * f32(i) + select(0.0, dm.y * xs.y, part == 0u);
}

// Q5_1 on 8-bit x (row_dot_q8.wgsl, blocks32.wgsl), beside dequant/q5_1.wgsl.

// The block's m times the sum of its x (m d_x times the sum of x's quants) comes once, with part 0.
fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let x = x8_pair(x_blk, 2u * part);
    let xs = xd[x_blk];
    let h = q5_1_head(b);
    let q = w_u32(body_at(b) + 4u * part);
    let lo = (q & 0x0f0f0f0fu) | (bit_bytes(h.qh >> (4u * part)) << 4u);
    let hi = ((q >> 4u) & 0x0f0f0f0fu) | (bit_bytes(h.qh >> (16u + 4u * part)) << 4u);
    let i = dot4I8Packed(lo, x.x) + dot4I8Packed(hi, x.y);
    return h.dm.x * xs.x * f32(i) + select(0.0, h.dm.y * xs.y, part == 0u);
}

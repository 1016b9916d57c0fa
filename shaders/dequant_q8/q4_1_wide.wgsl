// Q4_1 on 8-bit x (row_dot_q8.wgsl, block32_wide.wgsl), beside dequant/q4_1_wide.wgsl: the block's
// m times the sum of its x (m d_x times the sum of x's quants) beside d times the dot product.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let dm = unpack2x16float(w_u32(head_at(b)));
    let q = words4(body_at(b) / 4u);
    let lo = q & vec4<u32>(0x0f0f0f0fu);
    let hi = (q >> vec4<u32>(4u)) & vec4<u32>(0x0f0f0f0fu);
    let xs = xd[x_blk];
    return dm.x * xs.x * f32(block32_dot(lo, hi, x_blk)) + dm.y * xs.y;
}

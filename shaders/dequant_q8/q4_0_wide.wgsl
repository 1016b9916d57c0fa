// Q4_0 on 8-bit x (row_dot_q8.wgsl, block32_wide.wgsl), beside dequant/q4_0_wide.wgsl.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let q = words4(body_at(b) / 4u);
    let lo = centered_bytes4(q & vec4<u32>(0x0f0f0f0fu), 8u);
    let hi = centered_bytes4((q >> vec4<u32>(4u)) & vec4<u32>(0x0f0f0f0fu), 8u);
    return w_f16(head_at(b)) * xd[x_blk].x * f32(block32_dot(lo, hi, x_blk));
}

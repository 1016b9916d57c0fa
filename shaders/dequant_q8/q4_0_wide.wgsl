// Q4_0 on 8-bit x (row_dot_q8.wgsl, block32_wide.wgsl), beside dequant/q4_0_wide.wgsl.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let q = words4(body_at(b, 2u) / 4u);
    let lo = centered_bytes4(q & vec4<u32>(0x0f0f0f0fu), 8u);
    let hi = centered_bytes4((q >> vec4<u32>(4u)) & vec4<u32>(0x0f0f0f0fu), 8u);
    return w_f16(head_at(b, 2u)) * xd[x_blk].x * f32(block32_dot(lo, hi, x_blk));
}

// centered_bytes for four words.
fn centered_bytes4(v: vec4<u32>, k: u32) -> vec4<u32> {
    return vec4<u32>(centered_bytes(v.x, k), centered_bytes(v.y, k), centered_bytes(v.z, k),
                     centered_bytes(v.w, k));
}

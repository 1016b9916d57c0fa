// Q5_0 on 8-bit x (row_dot_q8.wgsl, block32_wide.wgsl), beside dequant/q5_0_wide.wgsl.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let h = q5_head(b);
    let q = words4(body_at(b) / 4u);
    var lo: vec4<u32>;
    var hi: vec4<u32>;
    for (var i = 0u; i < 4u; i++) {
        lo[i] = (q[i] & 0x0f0f0f0fu) | (bit_bytes(h.qh >> (4u * i)) << 4u);
        hi[i] = ((q[i] >> 4u) & 0x0f0f0f0fu) | (bit_bytes(h.qh >> (16u + 4u * i)) << 4u);
    }
    let lo16 = centered_bytes4(lo, 16u);
    let hi16 = centered_bytes4(hi, 16u);
    return h.d * xd[x_blk].x * f32(block32_dot(lo16, hi16, x_blk));
}

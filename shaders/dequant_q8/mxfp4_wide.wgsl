// MXFP4 on 8-bit x (row_dot_q8.wgsl, block32_wide.wgsl), beside dequant/mxfp4_wide.wgsl: the codes'
// doubled values as signed bytes (dequant_q8/mxfp4.wgsl's e2m1_bytes).

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let q = words4(body_at(b) / 4u);
    var lo: vec4<u32>;
    var hi: vec4<u32>;
    for (var i = 0u; i < 4u; i++) {
        lo[i] = e2m1_bytes(q[i] & 0x0f0f0f0fu);
        hi[i] = e2m1_bytes((q[i] >> 4u) & 0x0f0f0f0fu);
    }
    let d = e8m0_half(w_u8(head_at(b)));
    return d * xd[x_blk].x * f32(block32_dot(lo, hi, x_blk));
}

// MXFP4 on 8-bit x (row_dot_q8.wgsl, blocks32.wgsl), beside dequant/mxfp4.wgsl: a code's doubled
// value (at most 12) is a small integer as it is, so four of them make four signed bytes for an
// integer dot product, and the block's exponent scales the sum once.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let x = x8_pair(x_blk, 2u * part);
    let xs = xd[x_blk];
    let d = e8m0_half(w_u8(head_at(b)));
    let q = w_u32(body_at(b) + 4u * part);
    let lo = e2m1_bytes(q & 0x0f0f0f0fu);
    let hi = e2m1_bytes((q >> 4u) & 0x0f0f0f0fu);
    return d * xs.x * f32(dot4I8Packed(lo, x.x) + dot4I8Packed(hi, x.y));
}

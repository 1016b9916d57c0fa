// MXFP4 on 8-bit x (row_dot_q8.wgsl, blocks32.wgsl), beside dequant/mxfp4.wgsl: a code's doubled
// value (at most 12) is a small integer as it is, so four of them make four signed bytes for an
// integer dot product, and the block's exponent scales the sum once.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let x = x8_pair(x_blk, 2u * part);
    let xs = xd[x_blk];
    let d = e8m0_half(w_u8(head_at(b, 1u)));
    let q = w_u32(body_at(b) + 4u * part);
    let lo = e2m1_bytes(q & 0x0f0f0f0fu);
    let hi = e2m1_bytes((q >> 4u) & 0x0f0f0f0fu);
    return d * xs.x * f32(dot4I8Packed(lo, x.x) + dot4I8Packed(hi, x.y));
}

// Four codes, one in the low nibble of each byte, as their doubled values in signed bytes (as
// e2m1_doubled reckons them).
fn e2m1_bytes(codes: u32) -> u32 {
    let n = (vec4<u32>(codes) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u);
    let m = n & vec4<u32>(7u);
    let shift = max(m >> vec4<u32>(1u), vec4<u32>(1u)) - vec4<u32>(1u);
    let magnitude = vec4<i32>(select((vec4<u32>(2u) + (m & vec4<u32>(1u))) << shift, m, m < vec4<u32>(2u)));
    return pack4xI8(select(magnitude, -magnitude, n >= vec4<u32>(8u)));
}

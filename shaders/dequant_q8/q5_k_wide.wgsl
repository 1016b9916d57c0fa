// Q5_K on 8-bit x (row_dot_q8.wgsl, k_quants.wgsl), beside dequant/q5_k_wide.wgsl: as Q4_K's, with
// the fifth bits of the part's 16 weights of each sub-block from fifth-bit bytes 16 (part % 2)..16
// (part % 2) + 16, bits sub and sub + 1, moved to bit 4 of each byte.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let sub = 2u * (part / 2u);
    let q = words4((b + 48u) / 4u + 4u * part);
    let h = words4((b + 16u) / 4u + 4u * (part % 2u));
    let h_lo = ((h >> vec4<u32>(sub)) & vec4<u32>(0x01010101u)) << vec4<u32>(4u);
    let h_hi = ((h >> vec4<u32>(sub + 1u)) & vec4<u32>(0x01010101u)) << vec4<u32>(4u);
    return k4_wide_int8(k4_header(words4(b / 4u)), part, q, h_lo, h_hi, x_blk);
}

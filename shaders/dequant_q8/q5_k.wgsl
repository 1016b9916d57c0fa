// Q5_K on 8-bit x (row_dot_q8.wgsl, k_quants.wgsl), beside dequant/q5_k.wgsl: as Q4_K's, with the
// fifth bits of the part's 8 weights of each sub-block from fifth-bit bytes 8 (part % 4)..8 (part % 4)
// + 8, bits sub and sub + 1, moved to bit 4 of each byte.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let sub = 2u * (part / 4u);
    let qs = (b + 48u) / 4u + 2u * part;
    let qh = (b + 16u) / 4u + 2u * (part % 4u);
    let q = vec2<u32>(word(qs), word(qs + 1u));
    let h = vec2<u32>(word(qh), word(qh + 1u));
    let h_lo = ((h >> vec2<u32>(sub)) & vec2<u32>(0x01010101u)) << vec2<u32>(4u);
    let h_hi = ((h >> vec2<u32>(sub + 1u)) & vec2<u32>(0x01010101u)) << vec2<u32>(4u);
    return k4_part_int8(block_at(b), part, q, h_lo, h_hi, x_blk);
}

// Q4_K on 8-bit x (row_dot_q8.wgsl, k_quants.wgsl), beside dequant/q4_k.wgsl: quant bytes 8 part..8
// part + 8, as block_part reads them.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let qs = (b + 16u) / 4u + 2u * part;
    let q = vec2<u32>(word(qs), word(qs + 1u));
    return k4_part_int8(block_at(b), part, q, vec2<u32>(0u), vec2<u32>(0u), x_blk);
}

// Q4_K on 8-bit x (row_dot_q8.wgsl, k_quants.wgsl), beside dequant/q4_k_wide.wgsl: quant bytes 16
// part..16 part + 16 in one load, as block_part reads them.

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let q = words4((b + 16u) / 4u + 4u * part);
    return k4_wide_int8(k4_header(words4(b / 4u)), part, q, vec4<u32>(0u), vec4<u32>(0u), x_blk);
}

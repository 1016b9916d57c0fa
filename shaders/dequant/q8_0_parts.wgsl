// Q8_0's block shared by 4 threads (parts32.wgsl; dequant/q8_0_wide.wgsl gives one thread a
// whole block): part p's weights are quant bytes 4p..4p + 4 and 16 + 4p..16 + 4p + 4.

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let d = w_f16(head_at(b));
    let at = body_at(b) + 4u * part;
    return array<vec4<f32>, PART_X4>(sbytes(w_u32(at)) * d, sbytes(w_u32(at + 16u)) * d);
}

// Q4_1's block shared by 4 threads (parts32.wgsl; dequant/q4_1_wide.wgsl gives one thread a
// whole block): part p's weights are the low and high nibbles of quant bytes 4p..4p + 4.

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let dm = unpack2x16float(w_u32(head_at(b)));
    let q = w_u32(body_at(b) + 4u * part);
    return array<vec4<f32>, PART_X4>(nibbles(q, 0u) * dm.x + dm.y, nibbles(q, 4u) * dm.x + dm.y);
}

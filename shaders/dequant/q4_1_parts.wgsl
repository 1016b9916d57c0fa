// Q4_1's block shared by 4 threads (dequant/q4_1_wide.wgsl gives one thread a whole block). Threads
// that share a block in row_dot_parts.wgsl, and the vec4s of weights each takes: part p (0..3)
// takes weights 4p..4p + 4 and 16 + 4p..16 + 4p + 4 (part_x4), the low and high nibbles of quant
// bytes 4p..4p + 4.
const PARTS: u32 = 4u;
const PART_X4: u32 = 2u;

fn part_x4(part: u32, j: u32) -> u32 {
    return part + 4u * j;
}

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let dm = unpack2x16float(w_u32(head_at(b)));
    let q = w_u32(body_at(b) + 4u * part);
    return array<vec4<f32>, PART_X4>(nibbles(q, 0u) * dm.x + dm.y, nibbles(q, 4u) * dm.x + dm.y);
}

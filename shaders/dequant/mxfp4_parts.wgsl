// MXFP4's block shared by 4 threads (dequant/mxfp4_wide.wgsl gives one thread a whole block).
// Threads that share a block in row_dot_parts.wgsl, and the vec4s of weights each takes: part p (0..3)
// takes weights 4p..4p + 4 and 16 + 4p..16 + 4p + 4 (part_x4), the low and high nibbles of code bytes
// 4p..4p + 4.
const PARTS: u32 = 4u;
const PART_X4: u32 = 2u;

fn part_x4(part: u32, j: u32) -> u32 {
    return part + 4u * j;
}

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let d = e8m0_half(w_u8(head_at(b)));
    let q = w_u32(body_at(b) + 4u * part);
    return array<vec4<f32>, PART_X4>(e2m1_doubled(q, 0u) * d, e2m1_doubled(q, 4u) * d);
}

// MXFP4's block shared by 4 threads (parts32.wgsl; dequant/mxfp4_wide.wgsl gives one thread a
// whole block): part p's weights are the low and high nibbles of code bytes 4p..4p + 4.

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let d = e8m0_half(w_u8(head_at(b)));
    let q = w_u32(body_at(b) + 4u * part);
    return array<vec4<f32>, PART_X4>(e2m1_doubled(q, 0u) * d, e2m1_doubled(q, 4u) * d);
}

// Q4_K's block shared by 16 threads in row_dot_parts.wgsl and row_dot_q8.wgsl, each reading two
// words of its quants (dequant/q4_k_wide.wgsl shares it by 8, a vec4 each): the vec4s of weights each
// takes.
const PARTS: u32 = 16u;
const PART_X4: u32 = 4u;

// Part `part` of 16 threads sharing the block (row_dot_parts.wgsl): quant bytes 8 part..8 part + 8,
// whose low nibbles are 8 weights of sub-block 2g and high nibbles the same 8 of sub-block 2g + 1
// (g = part / 4), at x as k4_part_x4 says.
fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let k = block_at(b);
    let sub = 2u * (part / 4u);
    let qs = (b + 16u) / 4u + 2u * part;
    let q = vec2<u32>(word(qs), word(qs + 1u));
    return k4_part16(k, sub, k4_nibbles(q));
}

fn part_x4(part: u32, j: u32) -> u32 {
    return k4_part_x4(part, j);
}

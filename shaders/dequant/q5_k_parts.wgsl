// Q5_K's block shared by 16 threads in row_dot_parts.wgsl and row_dot_q8.wgsl, each reading two
// words of its quants (dequant/q5_k_wide.wgsl shares it by 8, a vec4 each): the vec4s of weights each
// takes.
const PARTS: u32 = 16u;
const PART_X4: u32 = 4u;

// Part `part` of 16 threads sharing the block (row_dot_parts.wgsl): as Q4_K's, with the fifth bits
// of the same 8 weights of each sub-block from fifth-bit bytes 8 (part % 4)..8 (part % 4) + 8.
fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let k = block_at(b);
    let sub = 2u * (part / 4u);
    let qs = (b + 48u) / 4u + 2u * part;
    let qh = (b + 16u) / 4u + 2u * (part % 4u);
    let q = vec2<u32>(word(qs), word(qs + 1u));
    let h0 = word(qh);
    let h1 = word(qh + 1u);
    var n = k4_nibbles(q);
    n[0] += 16.0 * byte_bits(h0, sub);
    n[1] += 16.0 * byte_bits(h1, sub);
    n[2] += 16.0 * byte_bits(h0, sub + 1u);
    n[3] += 16.0 * byte_bits(h1, sub + 1u);
    return k4_part16(k, sub, n);
}

fn part_x4(part: u32, j: u32) -> u32 {
    return k4_part_x4(part, j);
}

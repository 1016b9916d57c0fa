// Q4_K's block shared by 8 threads in row_dot_parts.wgsl and row_dot_q8.wgsl, each reading a vec4 of
// its quants in one load (W as vec4s: words_vec4.wgsl; a block's 144 bytes keep its quants on 16-byte
// bounds), where dequant/q4_k_parts.wgsl's 16 threads read two words each: half the loads and half
// the headers decoded a weight. The vec4s of weights each takes.
const PARTS: u32 = 8u;
const PART_X4: u32 = 8u;

// Part `part` of 8: quant bytes 16 part..16 part + 16, whose low nibbles are weights 16 (part % 2)..
// of sub-block 2 (part / 2) and high nibbles the same 16 of the sub-block after it, at x as
// k4_wide_x4 says.
fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let k = k4_header(words4(b / 4u));
    let q = words4((b + 16u) / 4u + 4u * part);
    return k4_wide(k, 2u * (part / 2u), k4_wide_nibbles(q));
}

fn part_x4(part: u32, j: u32) -> u32 {
    return k4_wide_x4(part, j);
}

// F16's and BF16's 32-value "block" (the type's file gives half_pair) shared by 2 threads in
// row_dot_parts.wgsl, each loading two vec4s of it (W as vec4s: words_vec4.wgsl; rows of whole
// blocks keep every block on 16-byte bounds), where
// dequant/halves_parts.wgsl's 4 threads read two words twice: part p takes weights 8p..8p + 8 and
// 16 + 8p..16 + 8p + 8, words 4p..4p + 4 and 8 + 4p..8 + 4p + 4.
const PARTS: u32 = 2u;
const PART_X4: u32 = 4u;

fn part_x4(part: u32, j: u32) -> u32 {
    return 2u * part + (j & 1u) + 4u * (j >> 1u);
}

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let at = b / 4u + 4u * part;
    let lo = words4(at);
    let hi = words4(at + 8u);
    return array<vec4<f32>, PART_X4>(
        vec4<f32>(half_pair(lo.x), half_pair(lo.y)),
        vec4<f32>(half_pair(lo.z), half_pair(lo.w)),
        vec4<f32>(half_pair(hi.x), half_pair(hi.y)),
        vec4<f32>(half_pair(hi.z), half_pair(hi.w)),
    );
}

// BF16's 32-value "block" shared by 2 threads, two vec4 loads each, as dequant/f16_wide.wgsl shares
// F16's: part p takes weights 8p..8p + 8 and 16 + 8p..16 + 8p + 8.
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
        vec4<f32>(bf16_pair(lo.x), bf16_pair(lo.y)),
        vec4<f32>(bf16_pair(lo.z), bf16_pair(lo.w)),
        vec4<f32>(bf16_pair(hi.x), bf16_pair(hi.y)),
        vec4<f32>(bf16_pair(hi.z), bf16_pair(hi.w)),
    );
}

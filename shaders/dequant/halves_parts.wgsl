// F16's and BF16's runs of 32 split into parts; the type's file gives half_pair.
// Threads that share a block in row_dot_parts.wgsl, and the vec4s of weights each takes: part p (0..3)
// takes weights 4p..4p + 4 and 16 + 4p..16 + 4p + 4 (part_x4), words 2p, 2p + 1 and 8 + 2p, 9 + 2p.
const PARTS: u32 = 4u;
const PART_X4: u32 = 2u;

fn part_x4(part: u32, j: u32) -> u32 {
    return part + 4u * j;
}

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let at = b / 4u + 2u * part;
    return array<vec4<f32>, PART_X4>(
        vec4<f32>(half_pair(word(at)), half_pair(word(at + 1u))),
        vec4<f32>(half_pair(word(at + 8u)), half_pair(word(at + 9u))),
    );
}

// F16's and BF16's runs of 32 shared by 4 threads (parts32.wgsl); the type's file gives half_pair.
// Part p's weights are words 2p, 2p + 1 and 8 + 2p, 9 + 2p.

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let at = b / 4u + 2u * part;
    return array<vec4<f32>, PART_X4>(
        vec4<f32>(half_pair(word(at)), half_pair(word(at + 1u))),
        vec4<f32>(half_pair(word(at + 8u)), half_pair(word(at + 9u))),
    );
}

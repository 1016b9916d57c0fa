// F32's runs of 32 shared by 4 threads (parts32.wgsl): part p's weights are words 4p..4p + 4 and
// 16 + 4p..16 + 4p + 4.

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let at = b / 4u + 4u * part;
    return array<vec4<f32>, PART_X4>(
        bitcast<vec4<f32>>(vec4<u32>(word(at), word(at + 1u), word(at + 2u), word(at + 3u))),
        bitcast<vec4<f32>>(vec4<u32>(word(at + 16u), word(at + 17u), word(at + 18u), word(at + 19u))),
    );
}

// F32: 32 floats make a "block" for the kernels' purposes.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 128u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        let a = b + 16u * i;
        out[i] = bitcast<vec4<f32>>(vec4<u32>(w_u32(a), w_u32(a + 4u), w_u32(a + 8u), w_u32(a + 12u)));
    }
    return out;
}

// Threads that share a block in row_dot_parts.wgsl, and the vec4s of weights each takes: part p (0..3)
// takes weights 4p..4p + 4 and 16 + 4p..16 + 4p + 4 (part_x4), words 4p..4p + 4 and 16 + 4p..16 + 4p +
// 4.
const PARTS: u32 = 4u;
const PART_X4: u32 = 2u;

fn part_x4(part: u32, j: u32) -> u32 {
    return part + 4u * j;
}

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let at = b / 4u + 4u * part;
    return array<vec4<f32>, PART_X4>(
        bitcast<vec4<f32>>(vec4<u32>(word(at), word(at + 1u), word(at + 2u), word(at + 3u))),
        bitcast<vec4<f32>>(vec4<u32>(word(at + 16u), word(at + 17u), word(at + 18u), word(at + 19u))),
    );
}

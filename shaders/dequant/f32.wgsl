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

// F16: 32 halves make a "block" for the kernels' purposes; unpacked without shader-f16.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 64u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        out[i] = vec4<f32>(half_pair(w_u32(b + 8u * i)), half_pair(w_u32(b + 8u * i + 4u)));
    }
    return out;
}

// The two halves of a word, as halves_parts.wgsl and halves_wide.wgsl read them for F16 and BF16.
fn half_pair(w: u32) -> vec2<f32> {
    return unpack2x16float(w);
}

// Q5_K, 176 bytes for 256 weights: d, dmin (f16), 12 bytes of 6-bit scales and mins (as Q4_K), 32 bytes
// of fifth bits (bit s of byte l for weight l of sub-block s), 128 bytes of low nibbles (as Q4_K);
// w = d * scale * q - dmin * min.
const BLOCK_LEN: u32 = 256u;
const BLOCK_BYTES: u32 = 176u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let sm = scale_min_k4(b + 4u, sub);
    let scale = w_f16(b) * sm.x;
    let min = w_f16(b + 2u) * sm.y;
    let qs = b + 48u + 32u * (sub / 2u);
    let hi = (sub & 1u) * 4u;
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        let q = nibbles(w_u32(qs + 4u * i), hi) + 16.0 * byte_bits(w_u32(b + 16u + 4u * i), sub);
        out[i] = q * scale - min;
    }
    return out;
}

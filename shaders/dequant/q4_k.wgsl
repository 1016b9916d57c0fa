// Q4_K, 144 bytes for 256 weights: d (f16), dmin (f16), 12 bytes of packed 6-bit scales and mins for
// eight sub-blocks of 32, then 128 bytes of 4-bit quants. Sub-blocks 2g and 2g+1 share bytes
// 32g..32g+32 (low and high nibbles); w = d * scale * q - dmin * min.
const BLOCK_LEN: u32 = 256u;
const BLOCK_BYTES: u32 = 144u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let sm = scale_min_k4(b + 4u, sub);
    let scale = w_f16(b) * sm.x;
    let min = w_f16(b + 2u) * sm.y;
    let qs = b + 16u + 32u * (sub / 2u);
    let hi = (sub & 1u) * 4u;
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        out[i] = nibbles(w_u32(qs + 4u * i), hi) * scale - min;
    }
    return out;
}

// Q4_1, 20 bytes: d (f16), m (f16), 16 bytes of 4-bit quants laid out as in Q4_0; w = d * q + m.
// Blocks are word aligned.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 20u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let d = w_f16(b);
    let m = w_f16(b + 2u);
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        let q = W[(b + 4u) / 4u + i];
        out[i] = nibbles(q, 0u) * d + m;
        out[i + 4u] = nibbles(q, 4u) * d + m;
    }
    return out;
}

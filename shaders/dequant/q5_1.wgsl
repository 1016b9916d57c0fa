// Q5_1, 24 bytes: d (f16), m (f16), qh (32 fifth bits), 16 bytes of low nibbles; w = d * q + m.
// Blocks are word aligned.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 24u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let d = w_f16(b);
    let m = w_f16(b + 2u);
    let qh = W[(b + 4u) / 4u];
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        let q = W[(b + 8u) / 4u + i];
        out[i] = (nibbles(q, 0u) + 16.0 * bits4(qh, 4u * i)) * d + m;
        out[i + 4u] = (nibbles(q, 4u) + 16.0 * bits4(qh, 16u + 4u * i)) * d + m;
    }
    return out;
}

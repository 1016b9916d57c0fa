// Q4_0, 18 bytes: d (f16), then 16 bytes of 4-bit quants. Weight j < 16 is the low nibble of byte j,
// weight j + 16 its high nibble; w = d * (q - 8). Regrouped (bytes.wgsl): d at head_at, the
// quants at body_at.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 18u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let d = w_f16(head_at(b));
    let qs = w_words4(body_at(b));
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        out[i] = (nibbles(qs[i], 0u) - 8.0) * d;
        out[i + 4u] = (nibbles(qs[i], 4u) - 8.0) * d;
    }
    return out;
}

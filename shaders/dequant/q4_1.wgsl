// Q4_1, 20 bytes: d (f16), m (f16), 16 bytes of 4-bit quants laid out as in Q4_0; w = d * q + m.
// Regrouped (regrouped.wgsl): d and m at head_at, the quants at body_at.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 20u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let dm = unpack2x16float(w_u32(head_at(b)));
    let qs = w_words4(body_at(b));
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        out[i] = nibbles(qs[i], 0u) * dm.x + dm.y;
        out[i + 4u] = nibbles(qs[i], 4u) * dm.x + dm.y;
    }
    return out;
}

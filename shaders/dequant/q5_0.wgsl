// Q5_0, 22 bytes: d (f16), qh (32 fifth bits, bit j for weight j), 16 bytes of low nibbles as in
// Q4_0; w = d * (q - 16). Regrouped (regrouped.wgsl): d and qh, 6 bytes, at head_at, the nibbles at
// body_at.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 22u;

// The block's d and its fifth bits, whose word lies 2 bytes past a word in every other head.
struct Q5Head {
    d: f32,
    qh: u32,
}

fn q5_head(b: u32) -> Q5Head {
    let h = head_at(b);
    return Q5Head(w_f16(h), w_u16(h + 2u) | (w_u16(h + 4u) << 16u));
}

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let h = q5_head(b);
    let qs = w_words4(body_at(b));
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        let q = qs[i];
        out[i] = (nibbles(q, 0u) + 16.0 * bits4(h.qh, 4u * i) - 16.0) * h.d;
        out[i + 4u] = (nibbles(q, 4u) + 16.0 * bits4(h.qh, 16u + 4u * i) - 16.0) * h.d;
    }
    return out;
}

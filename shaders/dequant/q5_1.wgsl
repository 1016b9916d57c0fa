// Q5_1, 24 bytes: d (f16), m (f16), qh (32 fifth bits), 16 bytes of low nibbles; w = d * q + m.
// Regrouped (regrouped.wgsl): d, m and qh at head_at, the nibbles at body_at.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 24u;

// The block's d and m, and its fifth bits.
struct Q5_1Head {
    dm: vec2<f32>,
    qh: u32,
}

fn q5_1_head(b: u32) -> Q5_1Head {
    let h = head_at(b);
    return Q5_1Head(unpack2x16float(w_u32(h)), w_u32(h + 4u));
}

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let h = q5_1_head(b);
    let qs = w_words4(body_at(b));
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        out[i] = (nibbles(qs[i], 0u) + 16.0 * bits4(h.qh, 4u * i)) * h.dm.x + h.dm.y;
        out[i + 4u] = (nibbles(qs[i], 4u) + 16.0 * bits4(h.qh, 16u + 4u * i)) * h.dm.x + h.dm.y;
    }
    return out;
}

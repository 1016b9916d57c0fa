// Q8_0, 34 bytes: d (f16), 32 signed bytes; w = d * q. Regrouped (bytes.wgsl): d at head_at,
// the quants at body_at.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 34u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let d = w_f16(head_at(b));
    let q = w_words8(body_at(b));
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        out[i] = sbytes(q[i]) * d;
    }
    return out;
}

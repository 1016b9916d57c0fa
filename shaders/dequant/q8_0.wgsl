// Q8_0, 34 bytes: d (f16), 32 signed bytes; w = d * q. Regrouped in pairs (bytes.wgsl): d at head_at,
// the quants at body_at.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 34u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let d = w_f16(head_at(b, 2u));
    let q = w_words8(body_at(b));
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        out[i] = sbytes(q[i]) * d;
    }
    return out;
}

// Threads that share a block in row_dot_parts.wgsl, and the vec4s of weights each takes: part p (0..3)
// takes weights 4p..4p + 4 and 16 + 4p..16 + 4p + 4 (part_x4), quant bytes 4p..4p + 4 and 16 + 4p..16
// + 4p + 4.
const PARTS: u32 = 4u;
const PART_X4: u32 = 2u;

fn part_x4(part: u32, j: u32) -> u32 {
    return part + 4u * j;
}

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let d = w_f16(head_at(b, 2u));
    let at = body_at(b) + 4u * part;
    return array<vec4<f32>, PART_X4>(sbytes(w_u32(at)) * d, sbytes(w_u32(at + 16u)) * d);
}

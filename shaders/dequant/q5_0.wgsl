// Q5_0, 22 bytes: d (f16), qh (32 fifth bits, bit j for weight j), 16 bytes of low nibbles as in Q4_0;
// w = d * (q - 16). Regrouped (bytes.wgsl): d at head_at, qh and the nibbles at body_at.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 22u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let d = w_f16(head_at(b, 2u));
    let qh = w_u32(body_at(b, 2u));
    let qs = w_words4(body_at(b, 2u) + 4u);
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        let q = qs[i];
        out[i] = (nibbles(q, 0u) + 16.0 * bits4(qh, 4u * i) - 16.0) * d;
        out[i + 4u] = (nibbles(q, 4u) + 16.0 * bits4(qh, 16u + 4u * i) - 16.0) * d;
    }
    return out;
}

// Threads that share a block in row_dot_parts.wgsl, and the vec4s of weights each takes: part p (0..3)
// takes weights 4p..4p + 4 and 16 + 4p..16 + 4p + 4 (part_x4), the low and high nibbles of quant bytes
// 4p..4p + 4 and their fifth bits.
const PARTS: u32 = 4u;
const PART_X4: u32 = 2u;

fn part_x4(part: u32, j: u32) -> u32 {
    return part + 4u * j;
}

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let d = w_f16(head_at(b, 2u));
    let qh = w_u32(body_at(b, 2u));
    let q = w_u32(body_at(b, 2u) + 4u + 4u * part);
    return array<vec4<f32>, PART_X4>(
        (nibbles(q, 0u) + 16.0 * bits4(qh, 4u * part) - 16.0) * d,
        (nibbles(q, 4u) + 16.0 * bits4(qh, 16u + 4u * part) - 16.0) * d,
    );
}

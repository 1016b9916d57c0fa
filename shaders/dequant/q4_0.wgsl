// Q4_0, 18 bytes: d (f16), then 16 bytes of 4-bit quants. Weight j < 16 is the low nibble of byte j,
// weight j + 16 its high nibble; w = d * (q - 8). Regrouped in pairs (bytes.wgsl): d at head_at, the
// quants at body_at.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 18u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let d = w_f16(head_at(b, 2u));
    let qs = w_words4(body_at(b));
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        out[i] = (nibbles(qs[i], 0u) - 8.0) * d;
        out[i + 4u] = (nibbles(qs[i], 4u) - 8.0) * d;
    }
    return out;
}

// Threads that share a block in row_dot_parts.wgsl, and the vec4s of weights each takes: part p (0..3)
// takes weights 4p..4p + 4 and 16 + 4p..16 + 4p + 4 (part_x4), the low and high nibbles of quant bytes
// 4p..4p + 4.
const PARTS: u32 = 4u;
const PART_X4: u32 = 2u;

fn part_x4(part: u32, j: u32) -> u32 {
    return part + 4u * j;
}

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let d = w_f16(head_at(b, 2u));
    let q = w_u32(body_at(b) + 4u * part);
    return array<vec4<f32>, PART_X4>((nibbles(q, 0u) - 8.0) * d, (nibbles(q, 4u) - 8.0) * d);
}

// Q5_1, 24 bytes: d (f16), m (f16), qh (32 fifth bits), 16 bytes of low nibbles; w = d * q + m.
// Blocks are word aligned.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 24u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let d = w_f16(b);
    let m = w_f16(b + 2u);
    let qh = word((b + 4u) / 4u);
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        let q = word((b + 8u) / 4u + i);
        out[i] = (nibbles(q, 0u) + 16.0 * bits4(qh, 4u * i)) * d + m;
        out[i + 4u] = (nibbles(q, 4u) + 16.0 * bits4(qh, 16u + 4u * i)) * d + m;
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
    let dm = unpack2x16float(word(b / 4u));
    let qh = word((b + 4u) / 4u);
    let q = word((b + 8u) / 4u + part);
    return array<vec4<f32>, PART_X4>(
        (nibbles(q, 0u) + 16.0 * bits4(qh, 4u * part)) * dm.x + dm.y,
        (nibbles(q, 4u) + 16.0 * bits4(qh, 16u + 4u * part)) * dm.x + dm.y,
    );
}

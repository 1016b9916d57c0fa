// Q5_K's block shared by 8 threads, a vec4 of its quants each, as dequant/q4_k_wide.wgsl shares
// Q4_K's (176 bytes a block keep its fifth bits and quants on 16-byte bounds). The vec4s of weights
// each takes.
const PARTS: u32 = 8u;
const PART_X4: u32 = 8u;

// Part `part` of 8: as Q4_K's, with the fifth bits of the same 16 weights of each sub-block from
// fifth-bit bytes 16 (part % 2)..16 (part % 2) + 16.
fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let k = k4_header(words4(b / 4u));
    let sub = 2u * (part / 2u);
    let q = words4((b + 48u) / 4u + 4u * part);
    let h = words4((b + 16u) / 4u + 4u * (part % 2u));
    var n = k4_wide_nibbles(q);
    for (var i = 0u; i < 4u; i++) {
        n[i] += 16.0 * byte_bits(h[i], sub);
        n[i + 4u] += 16.0 * byte_bits(h[i], sub + 1u);
    }
    return k4_wide(k, sub, n);
}

fn part_x4(part: u32, j: u32) -> u32 {
    return k4_wide_x4(part, j);
}

// Q5_K, 176 bytes for 256 weights: d, dmin (f16), 12 bytes of 6-bit scales and mins (as Q4_K), 32 bytes
// of fifth bits (bit s of byte l for weight l of sub-block s), 128 bytes of low nibbles (as Q4_K);
// w = d * scale * q - dmin * min. Blocks are word aligned.
const BLOCK_LEN: u32 = 256u;
const BLOCK_BYTES: u32 = 176u;
// Threads that share a block in row_dot_parts.wgsl, and the vec4s of weights each takes.
const PARTS: u32 = 16u;
const PART_X4: u32 = 4u;

// The header of the block at `b`, decoded: see scales_mins_k4.
fn block_at(b: u32) -> KScales {
    return scales_mins_k4(b);
}

fn block_dequant32(k: KScales, b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let scale = k_scale(k, sub);
    let min = k_min(k, sub);
    let qh = (b + 16u) / 4u;
    let qs = (b + 48u) / 4u + 8u * (sub / 2u);
    let hi = (sub & 1u) * 4u;
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        let q = nibbles(W[qs + i], hi) + 16.0 * byte_bits(W[qh + i], sub);
        out[i] = q * scale - min;
    }
    return out;
}

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    return block_dequant32(block_at(b), b, sub);
}

// Part `part` of 16 threads sharing the block (row_dot_parts.wgsl): as Q4_K's, with the fifth bits
// of the same 8 weights of each sub-block from fifth-bit bytes 8 (part % 4)..8 (part % 4) + 8.
fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let k = block_at(b);
    let sub = 2u * (part / 4u);
    let qs = (b + 48u) / 4u + 2u * part;
    let qh = (b + 16u) / 4u + 2u * (part % 4u);
    let q = vec2<u32>(W[qs], W[qs + 1u]);
    let h0 = W[qh];
    let h1 = W[qh + 1u];
    var n = k4_nibbles(q);
    n[0] += 16.0 * byte_bits(h0, sub);
    n[1] += 16.0 * byte_bits(h1, sub);
    n[2] += 16.0 * byte_bits(h0, sub + 1u);
    n[3] += 16.0 * byte_bits(h1, sub + 1u);
    return k4_part16(k, sub, n);
}

fn part_x4(part: u32, j: u32) -> u32 {
    return k4_part_x4(part, j);
}

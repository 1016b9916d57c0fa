// Q5_K, 176 bytes for 256 weights: d, dmin (f16), 12 bytes of 6-bit scales and mins (as Q4_K), 32 bytes
// of fifth bits (bit s of byte l for weight l of sub-block s), 128 bytes of low nibbles (as Q4_K);
// w = d * scale * q - dmin * min. Blocks are word aligned.
const BLOCK_LEN: u32 = 256u;
const BLOCK_BYTES: u32 = 176u;

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
        let q = nibbles(word(qs + i), hi) + 16.0 * byte_bits(word(qh + i), sub);
        out[i] = q * scale - min;
    }
    return out;
}

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    return block_dequant32(block_at(b), b, sub);
}

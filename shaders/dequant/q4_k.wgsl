// Q4_K, 144 bytes for 256 weights: d (f16), dmin (f16), 12 bytes of packed 6-bit scales and mins for
// eight sub-blocks of 32, then 128 bytes of 4-bit quants. Sub-blocks 2g and 2g+1 share bytes
// 32g..32g+32 (low and high nibbles); w = d * scale * q - dmin * min. Blocks are word aligned.
const BLOCK_LEN: u32 = 256u;
const BLOCK_BYTES: u32 = 144u;

// The header of the block at `b`, decoded: see scales_mins_k4.
fn block_at(b: u32) -> KScales {
    return scales_mins_k4(b);
}

fn block_dequant32(k: KScales, b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let scale = k_scale(k, sub);
    let min = k_min(k, sub);
    let qs = (b + 16u) / 4u + 8u * (sub / 2u);
    let hi = (sub & 1u) * 4u;
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        out[i] = nibbles(word(qs + i), hi) * scale - min;
    }
    return out;
}

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    return block_dequant32(block_at(b), b, sub);
}

// MXFP4, 17 bytes: e (an E8M0 exponent), then 16 bytes of 4-bit E2M1 codes packed as in Q4_0 (weight
// j < 16 in the low nibble of byte j, weight j + 16 in its high nibble). w = code value * 2^(e - 128),
// the code values doubled (0, 1, 2, 3, 4, 6, 8, 12; the high bit is the sign) so that they are integers.
// Regrouped (bytes.wgsl): e at head_at, the codes at body_at.
const BLOCK_LEN: u32 = 32u;
const BLOCK_BYTES: u32 = 17u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let d = e8m0_half(w_u8(head_at(b)));
    let qs = w_words4(body_at(b));
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        out[i] = e2m1_doubled(qs[i], 0u) * d;
        out[i + 4u] = e2m1_doubled(qs[i], 4u) * d;
    }
    return out;
}

// 2^(e - 128) from its bits; e of 0 and 1 are f32 subnormals (which a GPU may flush to zero).
fn e8m0_half(e: u32) -> f32 {
    return bitcast<f32>(select((e - 1u) << 23u, 0x00200000u << e, e < 2u));
}

// The doubled values of the codes in the low (hi = 0u) or high (hi = 4u) nibbles of four bytes. A
// magnitude code m of 2 or more is (2 + its low bit) << (m / 2 - 1); below 2 it is itself.
fn e2m1_doubled(word: u32, hi: u32) -> vec4<f32> {
    let n = (vec4<u32>(word) >> vec4<u32>(hi, hi + 8u, hi + 16u, hi + 24u)) & vec4<u32>(15u);
    let m = n & vec4<u32>(7u);
    let shift = max(m >> vec4<u32>(1u), vec4<u32>(1u)) - vec4<u32>(1u);
    let magnitude = select((vec4<u32>(2u) + (m & vec4<u32>(1u))) << shift, m, m < vec4<u32>(2u));
    return select(vec4<f32>(magnitude), -vec4<f32>(magnitude), n >= vec4<u32>(8u));
}

// Four codes, one in the low nibble of each byte, as their doubled values in signed bytes (as
// e2m1_doubled reckons them), for integer dot products (dequant_q8/).
fn e2m1_bytes(codes: u32) -> u32 {
    let n = (vec4<u32>(codes) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u);
    let m = n & vec4<u32>(7u);
    let shift = max(m >> vec4<u32>(1u), vec4<u32>(1u)) - vec4<u32>(1u);
    let magnitude = vec4<i32>(select((vec4<u32>(2u) + (m & vec4<u32>(1u))) << shift, m, m < vec4<u32>(2u)));
    return pack4xI8(select(magnitude, -magnitude, n >= vec4<u32>(8u)));
}

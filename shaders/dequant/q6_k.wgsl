// Q6_K, 210 bytes for 256 weights: 128 bytes of low nibbles (ql), 64 bytes of high 2-bit pairs (qh),
// 16 signed 8-bit scales (one per 16 weights), d (f16). The block is two halves of 128 weights; within
// half n, quarter k (32 weights) takes nibble k/2 of ql[64n + 32(k%2) + l] and bits 2k of qh[32n + l];
// w = d * scale * (q - 32). Regrouped (bytes.wgsl): d at head_at, the rest (ql, qh, scales: 208
// bytes, on 16-byte bounds) at body_at, which the functions below take as the block's start.
const BLOCK_LEN: u32 = 256u;
const BLOCK_BYTES: u32 = 210u;

// The header of a block, read once: d and the 16 scales, four to a word.
struct Q6Scales {
    d: f32,
    scales: vec4<u32>,
}

fn block_at(b: u32) -> Q6Scales {
    let s = w_words4(body_at(b) + 192u);
    return Q6Scales(w_f16(head_at(b)), vec4<u32>(s[0], s[1], s[2], s[3]));
}

fn block_dequant32(k: Q6Scales, b: u32, sub: u32) -> array<vec4<f32>, 8> {
    return q6_dequant32(body_at(b), sub, k.d, k.scales[sub / 2u]);
}

// One sub-block needs only its word of scales.
fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let body = body_at(b);
    return q6_dequant32(body, sub, w_f16(head_at(b)), w_u32(body + 192u + 4u * (sub / 2u)));
}

// Sub-block `sub` of the block whose body is at `b`, its two scales in the low or high half of
// `scale_word`.
fn q6_dequant32(b: u32, sub: u32, d: f32, scale_word: u32) -> array<vec4<f32>, 8> {
    let n = sub / 4u;
    let k = sub % 4u;
    let pair = scale_word >> (16u * (sub & 1u));
    let scale = d * vec2<f32>(f32(i32(pair << 24u) >> 24u), f32(i32(pair << 16u) >> 24u));
    let ql = b + 64u * n + 32u * (k & 1u);
    let qh = b + 128u + 32u * n;
    let low = w_words8(ql);
    let high = w_words8(qh);
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        let q = nibbles(low[i], 4u * (k >> 1u)) + 16.0 * byte_crumbs(high[i], 2u * k);
        out[i] = (q - 32.0) * scale[i / 4u];
    }
    return out;
}

// d times signed scale byte `s` (0..16) of the scales' four words.
fn q6_scale(k: Q6Scales, s: u32) -> f32 {
    return k.d * f32(i32(k.scales[s / 4u] << (24u - 8u * (s % 4u))) >> 24u);
}

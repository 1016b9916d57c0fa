// Q6_K, 210 bytes for 256 weights: 128 bytes of low nibbles (ql), 64 bytes of high 2-bit pairs (qh),
// 16 signed 8-bit scales (one per 16 weights), d (f16). The block is two halves of 128 weights; within
// half n, quarter k (32 weights) takes nibble k/2 of ql[64n + 32(k%2) + l] and bits 2k of qh[32n + l];
// w = d * scale * (q - 32). Regrouped in pairs (bytes.wgsl): d at head_at, the rest (ql, qh, scales)
// at body_at, which the functions below take as the block's start.
const BLOCK_LEN: u32 = 256u;
const BLOCK_BYTES: u32 = 210u;
// Threads that share a block in row_dot_parts.wgsl, and the vec4s of weights each takes.
const PARTS: u32 = 16u;
const PART_X4: u32 = 4u;

// The header of a block, read once: d and the 16 scales, four to a word.
struct Q6Scales {
    d: f32,
    scales: vec4<u32>,
}

fn block_at(b: u32) -> Q6Scales {
    let s = w_words4(body_at(b) + 192u);
    return Q6Scales(w_f16(head_at(b, 2u)), vec4<u32>(s[0], s[1], s[2], s[3]));
}

fn block_dequant32(k: Q6Scales, b: u32, sub: u32) -> array<vec4<f32>, 8> {
    return q6_dequant32(body_at(b), sub, k.d, k.scales[sub / 2u]);
}

// One sub-block needs only its word of scales.
fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let body = body_at(b);
    return q6_dequant32(body, sub, w_f16(head_at(b, 2u)), w_u32(body + 192u + 4u * (sub / 2u)));
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

// Part `part` of 16 threads sharing the block (row_dot_parts.wgsl): half n = part / 8, weights
// l0..l0 + 4 (l0 = 4 (part % 8)) of each of its four quarters, from one word of ql for quarters 0
// and 2 (low and high nibbles), one for 1 and 3, and one of qh. A quarter's four weights share a scale.
fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let k = block_at(b);
    let body = body_at(b);
    let n = part / 8u;
    let l0 = 4u * (part % 8u);
    let ql = vec2<u32>(w_u32(body + 64u * n + l0), w_u32(body + 64u * n + 32u + l0));
    let qh = w_u32(body + 128u + 32u * n + l0);
    var out: array<vec4<f32>, 4>;
    for (var q = 0u; q < 4u; q++) {
        let s = 8u * n + 2u * q + l0 / 16u;
        let scale = k.d * f32(i32(k.scales[s / 4u] << (24u - 8u * (s % 4u))) >> 24u);
        let v = nibbles(ql[q & 1u], 4u * (q >> 1u)) + 16.0 * byte_crumbs(qh, 2u * q);
        out[q] = (v - 32.0) * scale;
    }
    return out;
}

// Where part `part`'s vec4 j (quarter j) lies in its block, in vec4s of x.
fn part_x4(part: u32, j: u32) -> u32 {
    return 32u * (part / 8u) + 8u * j + part % 8u;
}

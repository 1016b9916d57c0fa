// Q6_K, 210 bytes for 256 weights: 128 bytes of low nibbles (ql), 64 bytes of high 2-bit pairs (qh),
// 16 signed 8-bit scales (one per 16 weights), d (f16). The block is two halves of 128 weights; within
// half n, quarter k (32 weights) takes nibble k/2 of ql[64n + 32(k%2) + l] and bits 2k of qh[32n + l];
// w = d * scale * (q - 32).
const BLOCK_LEN: u32 = 256u;
const BLOCK_BYTES: u32 = 210u;

fn dequant32(b: u32, sub: u32) -> array<vec4<f32>, 8> {
    let n = sub / 4u;
    let k = sub % 4u;
    let d = w_f16(b + 208u);
    let ql = b + 64u * n + 32u * (k & 1u);
    let qh = b + 128u + 32u * n;
    let scales = b + 192u + 8u * n + 2u * k;
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        let q = nibbles(w_u32(ql + 4u * i), 4u * (k >> 1u)) + 16.0 * byte_crumbs(w_u32(qh + 4u * i), 2u * k);
        out[i] = (q - 32.0) * (d * w_i8(scales + i / 4u));
    }
    return out;
}

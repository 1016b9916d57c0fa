// Q6_K's block shared by 8 threads in row_dot_parts.wgsl and row_dot_q8.wgsl, each reading 16 bytes
// of its low nibbles and 16 of its high bits in a vec4 load each (W as vec4s: words_vec4.wgsl; the
// regrouped bodies lie on 16-byte bounds), where dequant/q6_k_parts.wgsl's 16 threads read three
// words each: fewer loads and half the headers decoded a weight. The vec4s of weights each takes.
const PARTS: u32 = 8u;
const PART_X4: u32 = 8u;

// Part `part` of 8: ql bytes 16 c..16 c + 16 of half n = part / 4 (c = part % 4), whose low nibbles
// are weights j0..j0 + 16 (j0 = 16 (c % 2)) of quarter lo = c / 2 and high nibbles the same of
// quarter lo + 2; their high bits are qh bytes j0..j0 + 16 of the half. Each quarter's 16 weights
// share a scale, byte s of the 16 (s + 4 for the high quarter).
struct Q6Part {
    k: Q6Scales,
    ql: vec4<u32>,
    qh: vec4<u32>,
    lo: u32,
    s: u32,
}

fn q6_wide_part(b: u32, part: u32) -> Q6Part {
    let n = part / 4u;
    let c = part % 4u;
    let words = body_at(b) / 4u;
    let ql = words4(words + 16u * n + 4u * c);
    let qh = words4(words + 32u + 8u * n + 4u * (c % 2u));
    return Q6Part(block_at(b), ql, qh, c / 2u, 8u * n + 2u * (c / 2u) + c % 2u);
}

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let p = q6_wide_part(b, part);
    let scale = vec2<f32>(q6_scale(p.k, p.s), q6_scale(p.k, p.s + 4u));
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        let v_lo = nibbles(p.ql[i], 0u) + 16.0 * byte_crumbs(p.qh[i], 2u * p.lo);
        let v_hi = nibbles(p.ql[i], 4u) + 16.0 * byte_crumbs(p.qh[i], 2u * p.lo + 4u);
        out[i] = (v_lo - 32.0) * scale.x;
        out[i + 4u] = (v_hi - 32.0) * scale.y;
    }
    return out;
}

// Where vec4 j of the part lies in its block, in vec4s of x: weight 128 n + 32 quarter + j0 + 4 j
// of the low quarter (j < 4), 64 weights on for the high one.
fn part_x4(part: u32, j: u32) -> u32 {
    return 32u * (part / 4u) + 4u * (part % 4u) + (j & 3u) + 16u * (j >> 2u);
}

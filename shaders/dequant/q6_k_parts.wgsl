// Q6_K's block shared by 16 threads in row_dot_parts.wgsl (dequant/q6_k_wide.wgsl shares it by 8, a
// vec4 each): the vec4s of weights each takes.
const PARTS: u32 = 16u;
const PART_X4: u32 = 4u;

// Part `part` of 16: half n = part / 8, weights l0..l0 + 4 (l0 = 4 (part % 8)) of each of its four
// quarters, from one word of ql for quarters 0 and 2 (low and high nibbles), one for 1 and 3, and one
// of qh. A quarter's four weights share a scale.
fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let k = block_at(b);
    let body = body_at(b);
    let n = part / 8u;
    let l0 = 4u * (part % 8u);
    let ql = vec2<u32>(w_u32(body + 64u * n + l0), w_u32(body + 64u * n + 32u + l0));
    let qh = w_u32(body + 128u + 32u * n + l0);
    var out: array<vec4<f32>, 4>;
    for (var q = 0u; q < 4u; q++) {
        let scale = q6_scale(k, 8u * n + 2u * q + l0 / 16u);
        let v = nibbles(ql[q & 1u], 4u * (q >> 1u)) + 16.0 * byte_crumbs(qh, 2u * q);
        out[q] = (v - 32.0) * scale;
    }
    return out;
}

// Where part `part`'s vec4 j (quarter j) lies in its block, in vec4s of x.
fn part_x4(part: u32, j: u32) -> u32 {
    return 32u * (part / 8u) + 8u * j + part % 8u;
}

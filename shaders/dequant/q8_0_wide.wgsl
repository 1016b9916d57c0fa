// Q8_0's block taken whole by one thread in row_dot_parts.wgsl and row_dot_q8.wgsl, its 32 bytes of
// quants in two vec4 loads (W as vec4s: words_vec4.wgsl; the regrouped bodies lie on 16-byte
// bounds), where dequant/q8_0.wgsl's 4 threads read two words each.
const PARTS: u32 = 1u;
const PART_X4: u32 = 8u;

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let d = w_f16(head_at(b));
    let at = body_at(b) / 4u;
    let q = array<vec4<u32>, 2>(words4(at), words4(at + 4u));
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        out[i] = sbytes(q[i / 4u][i % 4u]) * d;
    }
    return out;
}

fn part_x4(part: u32, j: u32) -> u32 {
    return j;
}

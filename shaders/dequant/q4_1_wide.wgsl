// Q4_1's block taken whole by one thread in row_dot_parts.wgsl and row_dot_q8.wgsl, its 16 bytes of
// quants in one vec4 load (W as vec4s: words_vec4.wgsl; the regrouped bodies lie on 16-byte
// bounds), where dequant/q4_1_parts.wgsl's 4 threads read a word each.
const PARTS: u32 = 1u;
const PART_X4: u32 = 8u;

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let dm = unpack2x16float(w_u32(head_at(b)));
    let q = words4(body_at(b) / 4u);
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        out[i] = nibbles(q[i], 0u) * dm.x + dm.y;
        out[i + 4u] = nibbles(q[i], 4u) * dm.x + dm.y;
    }
    return out;
}

// Quant word i's low nibbles are weights 4 i..4 i + 4, its high nibbles 16 on.
fn part_x4(part: u32, j: u32) -> u32 {
    return j;
}

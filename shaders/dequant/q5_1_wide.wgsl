// Q5_1's block taken whole by one thread in row_dot_parts.wgsl and row_dot_q8.wgsl, its 16 bytes of
// low nibbles in one vec4 load (W as vec4s: words_vec4.wgsl; the regrouped bodies lie on 16-byte
// bounds), where dequant/q5_1_parts.wgsl's 4 threads read a word each and the head each.
const PARTS: u32 = 1u;
const PART_X4: u32 = 8u;

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let h = q5_1_head(b);
    let q = words4(body_at(b) / 4u);
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        out[i] = (nibbles(q[i], 0u) + 16.0 * bits4(h.qh, 4u * i)) * h.dm.x + h.dm.y;
        out[i + 4u] = (nibbles(q[i], 4u) + 16.0 * bits4(h.qh, 16u + 4u * i)) * h.dm.x + h.dm.y;
    }
    return out;
}

// Quant word i's low nibbles are weights 4 i..4 i + 4, its high nibbles 16 on.
fn part_x4(part: u32, j: u32) -> u32 {
    return j;
}

// Q5_1's block shared by 4 threads (parts32.wgsl; dequant/q5_1_wide.wgsl gives one thread a
// whole block): part p's weights are the low and high nibbles of quant bytes 4p..4p + 4 and their
// fifth bits.

fn block_part(b: u32, part: u32) -> array<vec4<f32>, PART_X4> {
    let h = q5_1_head(b);
    let q = w_u32(body_at(b) + 4u * part);
    return array<vec4<f32>, PART_X4>(
        (nibbles(q, 0u) + 16.0 * bits4(h.qh, 4u * part)) * h.dm.x + h.dm.y,
        (nibbles(q, 4u) + 16.0 * bits4(h.qh, 16u + 4u * part)) * h.dm.x + h.dm.y,
    );
}

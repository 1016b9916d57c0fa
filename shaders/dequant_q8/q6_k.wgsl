// Q6_K on 8-bit x (row_dot_q8.wgsl), beside dequant/q6_k.wgsl: block_part's split of a block in 16
// parts, part p taking weights l0..l0 + 4 (l0 = 4 (p % 8)) of each quarter q of half n = p / 8. A
// quarter is one x block of 32 values (x block 4 n + q of the weights' block), and its four weights
// meet x word p % 8 of it: x's words stay in order. A weight is its 6-bit quant less 32, a signed
// byte, under a signed 8-bit scale per 16 weights and the block's d.

fn x8_place(i: u32) -> u32 {
    return i;
}

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let body = body_at(b);
    let n = part / 8u;
    let word = part % 8u;
    let l0 = 4u * word;
    let ql = vec2<u32>(w_u32(body + 64u * n + l0), w_u32(body + 64u * n + 32u + l0));
    let qh = w_u32(body + 128u + 32u * n + l0);
    // Quarter q's scale is byte 8 n + 2 q + l0 / 16 of the 16: quarters 0 and 1 in the half's first
    // word of scales, 2 and 3 in its second.
    let scales = vec2<u32>(w_u32(body + 192u + 8u * n), w_u32(body + 196u + 8u * n));
    let first = x_blk + 4u * n;
    var sum = 0.0;
    for (var q = 0u; q < 4u; q++) {
        let low = (ql[q & 1u] >> (4u * (q >> 1u))) & 0x0f0f0f0fu;
        let high = ((qh >> (2u * q)) & 0x03030303u) << 4u;
        let dot = dot4I8Packed(centered_bytes(low | high, 32u), xq[8u * (first + q) + word]);
        let byte = 2u * (q & 1u) + l0 / 16u;
        let scale = i32(scales[q >> 1u] << (24u - 8u * byte)) >> 24u;
        sum += f32(scale * dot) * xd[first + q].x;
    }
    return w_f16(head_at(b)) * sum;
}

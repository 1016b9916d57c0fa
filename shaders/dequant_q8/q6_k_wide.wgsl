// Q6_K on 8-bit x (row_dot_q8.wgsl), beside dequant/q6_k_wide.wgsl: part p of 8 reads 16 bytes of ql
// and 16 of qh in a vec4 load each, holding weights j0..j0 + 16 (j0 = 16 (p % 2)) of quarters lo =
// (p % 4) / 2 and lo + 2 of half n = p / 4. A quarter is one x block of 32 values (x block 4 n +
// quarter of the weights' block), and its 16 weights meet x words 4 (p % 2).. of it: x's words stay
// in order. Each quarter's 16 weights share a signed scale.

fn x8_place(i: u32) -> u32 {
    return i;
}

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let k = block_at(b);
    let n = part / 4u;
    let c = part % 4u;
    let words = body_at(b) / 4u;
    let ql = words4(words + 16u * n + 4u * c);
    let qh = words4(words + 32u + 8u * n + 4u * (c % 2u));
    let lo = c / 2u;
    let first = x_blk + 4u * n + lo;
    let xa = x8_quad(first, 4u * (c % 2u));
    let xb = x8_quad(first + 2u, 4u * (c % 2u));
    var dot_lo = 0;
    var dot_hi = 0;
    for (var i = 0u; i < 4u; i++) {
        let low = (ql[i] & 0x0f0f0f0fu) | (((qh[i] >> (2u * lo)) & 0x03030303u) << 4u);
        let high = ((ql[i] >> 4u) & 0x0f0f0f0fu) | (((qh[i] >> (2u * lo + 4u)) & 0x03030303u) << 4u);
        dot_lo += dot4I8Packed(centered_bytes(low, 32u), xa[i]);
        dot_hi += dot4I8Packed(centered_bytes(high, 32u), xb[i]);
    }
    let s = 8u * n + 2u * lo + c % 2u;
    let sums = q6_scale(k, s) * xd[first].x * f32(dot_lo);
    return sums + q6_scale(k, s + 4u) * xd[first + 2u].x * f32(dot_hi);
}

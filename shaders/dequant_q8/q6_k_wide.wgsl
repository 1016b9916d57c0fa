// Q6_K on 8-bit x (row_dot_q8.wgsl), beside dequant/q6_k_wide.wgsl (q6_wide_part): part p of 8
// holds weights j0..j0 + 16 (j0 = 16 (p % 2)) of quarters lo and lo + 2 of half n = p / 4. A
// quarter is one x block of 32 values (x block 4 n + quarter of the weights' block), and its 16
// weights meet x words 4 (p % 2).. of it: x's words stay in order. Each quarter's 16 weights share
// a signed scale.

fn x8_place(i: u32) -> u32 {
    return i;
}

fn block_part_int8(b: u32, part: u32, x_blk: u32) -> f32 {
    let p = q6_wide_part(b, part);
    let first = x_blk + 4u * (part / 4u) + p.lo;
    let xa = x8_quad(first, 4u * (part % 2u));
    let xb = x8_quad(first + 2u, 4u * (part % 2u));
    var dot_lo = 0;
    var dot_hi = 0;
    for (var i = 0u; i < 4u; i++) {
        let high_lo = ((p.qh[i] >> (2u * p.lo)) & 0x03030303u) << 4u;
        let high_hi = ((p.qh[i] >> (2u * p.lo + 4u)) & 0x03030303u) << 4u;
        let low = (p.ql[i] & 0x0f0f0f0fu) | high_lo;
        let high = ((p.ql[i] >> 4u) & 0x0f0f0f0fu) | high_hi;
        dot_lo += dot4I8Packed(centered_bytes(low, 32u), xa[i]);
        dot_hi += dot4I8Packed(centered_bytes(high, 32u), xb[i]);
    }
    let sums = q6_scale(p.k, p.s) * xd[first].x * f32(dot_lo);
    return sums + q6_scale(p.k, p.s + 4u) * xd[first + 2u].x * f32(dot_hi);
}

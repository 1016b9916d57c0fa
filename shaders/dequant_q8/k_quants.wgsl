// What Q4_K and Q5_K share on 8-bit x (row_dot_q8.wgsl): part p of 16 of a block, as k4_part16
// splits it (bytes.wgsl), its dot product with x quantized to 8 bits by integer dot products. The
// part's 8 quant bytes hold 8 weights of sub-block `sub` (low nibbles) and the same 8 of `sub` + 1
// (high nibbles), which meet x words 2 (p % 4) and 2 (p % 4) + 1 of x blocks x_blk + sub and x_blk +
// sub + 1: x's words stay in order.

fn x8_place(i: u32) -> u32 {
    return i;
}

// The part's sum from its quants `q` and fifth bits (`h_lo`, `h_hi`: 16 or 0 in each byte, for the
// low and high nibbles; zeros for Q4_K): d scale times each sub-block's integer dot product with x,
// less dmin min times the sum of the sub-block's x, which the first part of the sub-block's four
// (p % 4 = 0) takes for them all.
fn k4_part_int8(k: KScales, part: u32, q: vec2<u32>, h_lo: vec2<u32>, h_hi: vec2<u32>,
                 x_blk: u32) -> f32 {
    let sub = 2u * (part / 4u);
    let at = 2u * (part % 4u);
    let xa = x8_pair(x_blk + sub, at);
    let xb = x8_pair(x_blk + sub + 1u, at);
    let sa = xd[x_blk + sub];
    let sb = xd[x_blk + sub + 1u];
    let lo = dot4I8Packed((q.x & 0x0f0f0f0fu) | h_lo.x, xa.x)
        + dot4I8Packed((q.y & 0x0f0f0f0fu) | h_lo.y, xa.y);
    let hi = dot4I8Packed(((q.x >> 4u) & 0x0f0f0f0fu) | h_hi.x, xb.x)
        + dot4I8Packed(((q.y >> 4u) & 0x0f0f0f0fu) | h_hi.y, xb.y);
    let mins = vec2<f32>(k_min(k, sub) * sa.y, k_min(k, sub + 1u) * sb.y);
    let first = select(0.0, 1.0, part % 4u == 0u);
    let sums = k_scale(k, sub) * sa.x * f32(lo) + k_scale(k, sub + 1u) * sb.x * f32(hi);
    return sums - first * (mins.x + mins.y);
}

// k4_part_int8 for a part of 8 threads a block (dequant/q4_k_wide.wgsl's split): 16 quant bytes `q`
// (fifth bits `h_lo`, `h_hi`) holding 16 weights of sub-block 2 (part / 2) and the same 16 of the
// sub-block after it, which meet x words 4 (part % 2).. of the two sub-blocks' x blocks.
fn k4_wide_int8(k: KScales, part: u32, q: vec4<u32>, h_lo: vec4<u32>, h_hi: vec4<u32>,
                x_blk: u32) -> f32 {
    let sub = 2u * (part / 2u);
    let at = 4u * (part % 2u);
    let xa = x8_quad(x_blk + sub, at);
    let xb = x8_quad(x_blk + sub + 1u, at);
    let sa = xd[x_blk + sub];
    let sb = xd[x_blk + sub + 1u];
    var lo = 0;
    var hi = 0;
    for (var i = 0u; i < 4u; i++) {
        lo += dot4I8Packed((q[i] & 0x0f0f0f0fu) | h_lo[i], xa[i]);
        hi += dot4I8Packed(((q[i] >> 4u) & 0x0f0f0f0fu) | h_hi[i], xb[i]);
    }
    let mins = vec2<f32>(k_min(k, sub) * sa.y, k_min(k, sub + 1u) * sb.y);
    let first = select(0.0, 1.0, part % 2u == 0u);
    let sums = k_scale(k, sub) * sa.x * f32(lo) + k_scale(k, sub + 1u) * sb.x * f32(hi);
    return sums - first * (mins.x + mins.y);
}

// Reads of packed weights. `W` is the kernel's weight binding: the tensor's GGUF blocks viewed as u32
// words, every word a kernel reads aligned (blocks of 17, 18, 22, 34 or 210 bytes come regrouped:
// regrouped.wgsl).

fn w_u32(addr: u32) -> u32 {
    return word(addr >> 2u);
}

fn w_words4(addr: u32) -> array<u32, 4> {
    let a = addr >> 2u;
    return array<u32, 4>(word(a), word(a + 1u), word(a + 2u), word(a + 3u));
}

fn w_words8(addr: u32) -> array<u32, 8> {
    var out: array<u32, 8>;
    for (var i = 0u; i < 8u; i++) {
        out[i] = word((addr >> 2u) + i);
    }
    return out;
}

// At an even address (every f16 of every block type is): one load.
fn w_u16(addr: u32) -> u32 {
    return (word(addr >> 2u) >> ((addr & 2u) * 8u)) & 0xffffu;
}

fn w_u8(addr: u32) -> u32 {
    return (word(addr >> 2u) >> ((addr & 3u) * 8u)) & 0xffu;
}

fn w_f16(addr: u32) -> f32 {
    return unpack2x16float(w_u16(addr)).x;
}

// Four 4-bit values from the low (hi = 0u) or high (hi = 4u) nibbles of four bytes.
fn nibbles(word: u32, hi: u32) -> vec4<f32> {
    let n = (word >> hi) & 0x0f0f0f0fu;
    return vec4<f32>(f32(n & 0xffu), f32((n >> 8u) & 0xffu), f32((n >> 16u) & 0xffu), f32(n >> 24u));
}

// Four signed bytes.
fn sbytes(word: u32) -> vec4<f32> {
    return vec4<f32>(unpack4xI8(word));
}

// Bit i (0..31) of `bits` for the four consecutive indices i0..i0+3, as 0.0 or 1.0.
fn bits4(bits: u32, i0: u32) -> vec4<f32> {
    let b = bits >> i0;
    return vec4<f32>(f32(b & 1u), f32((b >> 1u) & 1u), f32((b >> 2u) & 1u), f32((b >> 3u) & 1u));
}

// Bit `bit` of each of four bytes, as 0.0 or 1.0.
fn byte_bits(word: u32, bit: u32) -> vec4<f32> {
    let b = (word >> bit) & 0x01010101u;
    return vec4<f32>(f32(b & 1u), f32((b >> 8u) & 1u), f32((b >> 16u) & 1u), f32(b >> 24u));
}

// Bits 0..3 of `bits`, one to each of four bytes (bit i to bit 0 of byte i): a multiply moves bit i
// by 7 i places, so that no two products overlap.
fn bit_bytes(bits: u32) -> u32 {
    return ((bits & 0xfu) * 0x00204081u) & 0x01010101u;
}

// Four bytes of 0..127 less `k` (at most 128) each, as the signed bytes dot4I8Packed reads: with the
// top bit of each byte set first, no byte borrows from the next, and flipping it back makes the
// difference two's complement.
fn centered_bytes(v: u32, k: u32) -> u32 {
    return ((v | 0x80808080u) - k * 0x01010101u) ^ 0x80808080u;
}

// Two bits at `shift` of each of four bytes, as 0.0 to 3.0.
fn byte_crumbs(word: u32, shift: u32) -> vec4<f32> {
    let b = (word >> shift) & 0x03030303u;
    return vec4<f32>(f32(b & 3u), f32((b >> 8u) & 3u), f32((b >> 16u) & 3u), f32(b >> 24u));
}

// Q4_K's and Q5_K's header: d and dmin, and each sub-block's 6-bit scale and min, a byte each (sub-blocks
// 0-3, then 4-7), kept packed until used. From the block at `b` (word aligned): d and dmin, then 12
// bytes where byte j < 4 holds scale j in its low 6 bits, byte j + 4 min j, and byte j + 8 the low
// nibbles of scale j + 4 and min j + 4, whose top two bits are the top bits of bytes j and j + 4.
struct KScales {
    d: vec2<f32>,
    scales: vec2<u32>,
    mins: vec2<u32>,
}

fn scales_mins_k4(b: u32) -> KScales {
    let i = b / 4u;
    return k4_header(vec4<u32>(word(i), word(i + 1u), word(i + 2u), word(i + 3u)));
}

// The header's four words, decoded.
fn k4_header(w: vec4<u32>) -> KScales {
    let scale_hi = (w.w & 0x0f0f0f0fu) | ((w.y >> 2u) & 0x30303030u);
    let min_hi = ((w.w >> 4u) & 0x0f0f0f0fu) | ((w.z >> 2u) & 0x30303030u);
    return KScales(
        unpack2x16float(w.x),
        vec2<u32>(w.y & 0x3f3f3f3fu, scale_hi),
        vec2<u32>(w.z & 0x3f3f3f3fu, min_hi),
    );
}

// d * scale of sub-block `sub`.
fn k_scale(k: KScales, sub: u32) -> f32 {
    return k.d.x * f32((k.scales[sub / 4u] >> (8u * (sub % 4u))) & 0xffu);
}

// dmin * min of sub-block `sub`.
fn k_min(k: KScales, sub: u32) -> f32 {
    return k.d.y * f32((k.mins[sub / 4u] >> (8u * (sub % 4u))) & 0xffu);
}

// Q4_K's and Q5_K's part of a block for one of 16 threads (row_dot_parts.wgsl): its quants `q`, 8
// weights of sub-block `sub` (q[0], q[1]) and the same 8 of `sub` + 1 (q[2], q[3]), scaled. Q4_K's
// are k4_nibbles' as they are; Q5_K adds its fifth bits first (a float add a weight that Q4_K, the
// commonest type, does not pay).
fn k4_part16(k: KScales, sub: u32, q: array<vec4<f32>, 4>) -> array<vec4<f32>, 4> {
    let lo = vec2<f32>(k_scale(k, sub), k_min(k, sub));
    let hi = vec2<f32>(k_scale(k, sub + 1u), k_min(k, sub + 1u));
    return array<vec4<f32>, 4>(
        q[0] * lo.x - lo.y,
        q[1] * lo.x - lo.y,
        q[2] * hi.x - hi.y,
        q[3] * hi.x - hi.y,
    );
}

// A part's 8 quant bytes `q` as k4_part16 takes them: the low nibbles, then the high.
fn k4_nibbles(q: vec2<u32>) -> array<vec4<f32>, 4> {
    return array<vec4<f32>, 4>(nibbles(q.x, 0u), nibbles(q.y, 0u), nibbles(q.x, 4u), nibbles(q.y, 4u));
}

// Where vec4 j of k4_part16's part lies in its block, in vec4s of x: weights 8 (part % 4).. of
// sub-blocks 2 (part / 4) (j = 0, 1) and 2 (part / 4) + 1 (j = 2, 3).
fn k4_part_x4(part: u32, j: u32) -> u32 {
    return 16u * (part / 4u) + 2u * (part % 4u) + (j & 1u) + 8u * (j >> 1u);
}

// k4_part16 for a part of 8 threads a block (dequant/q4_k_wide.wgsl, q5_k_wide.wgsl): 16 weights of
// sub-block `sub` (q[0..4]) and the same 16 of `sub` + 1 (q[4..8]), scaled.
fn k4_wide(k: KScales, sub: u32, q: array<vec4<f32>, 8>) -> array<vec4<f32>, 8> {
    let lo = vec2<f32>(k_scale(k, sub), k_min(k, sub));
    let hi = vec2<f32>(k_scale(k, sub + 1u), k_min(k, sub + 1u));
    var out: array<vec4<f32>, 8>;
    for (var i = 0u; i < 4u; i++) {
        out[i] = q[i] * lo.x - lo.y;
        out[i + 4u] = q[i + 4u] * hi.x - hi.y;
    }
    return out;
}

// A wide part's 16 quant bytes `q` as k4_wide takes them: the low nibbles, then the high.
fn k4_wide_nibbles(q: vec4<u32>) -> array<vec4<f32>, 8> {
    return array<vec4<f32>, 8>(nibbles(q.x, 0u), nibbles(q.y, 0u), nibbles(q.z, 0u), nibbles(q.w, 0u),
                               nibbles(q.x, 4u), nibbles(q.y, 4u), nibbles(q.z, 4u), nibbles(q.w, 4u));
}

// Where vec4 j of k4_wide's part lies in its block, in vec4s of x: weights 16 (part % 2).. of
// sub-blocks 2 (part / 2) (j < 4) and 2 (part / 2) + 1 (j >= 4).
fn k4_wide_x4(part: u32, j: u32) -> u32 {
    return 16u * (part / 2u) + 4u * (part % 2u) + (j & 3u) + 8u * (j >> 2u);
}

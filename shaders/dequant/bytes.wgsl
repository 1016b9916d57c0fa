// Reads of packed weights at any byte address. `W` is the kernel's weight binding: the tensor's GGUF
// blocks as they sit in the file, viewed as u32 words. Blocks of 18, 22 or 34 bytes are not word aligned,
// so a value may straddle two words.

fn w_u32(addr: u32) -> u32 {
    let word = addr >> 2u;
    let shift = (addr & 3u) * 8u;
    if (shift == 0u) {
        return W[word];
    }
    return (W[word] >> shift) | (W[word + 1u] << (32u - shift));
}

fn w_u16(addr: u32) -> u32 {
    return w_u32(addr) & 0xffffu;
}

fn w_u8(addr: u32) -> u32 {
    return (W[addr >> 2u] >> ((addr & 3u) * 8u)) & 0xffu;
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

// Two bits at `shift` of each of four bytes, as 0.0 to 3.0.
fn byte_crumbs(word: u32, shift: u32) -> vec4<f32> {
    let b = (word >> shift) & 0x03030303u;
    return vec4<f32>(f32(b & 3u), f32((b >> 8u) & 3u), f32((b >> 16u) & 3u), f32(b >> 24u));
}

fn w_i8(addr: u32) -> f32 {
    return f32(i32(w_u8(addr) << 24u) >> 24u);
}

// Q4_K and Q5_K: the 6-bit scale and min of sub-block j from the 12 packed bytes at `s`.
fn scale_min_k4(s: u32, j: u32) -> vec2<f32> {
    if (j < 4u) {
        return vec2<f32>(f32(w_u8(s + j) & 63u), f32(w_u8(s + j + 4u) & 63u));
    }
    let sc = (w_u8(s + j + 4u) & 0xfu) | ((w_u8(s + j - 4u) >> 6u) << 4u);
    let m = (w_u8(s + j + 4u) >> 4u) | ((w_u8(s + j) >> 6u) << 4u);
    return vec2<f32>(f32(sc), f32(m));
}

// What the 32-weight types' wide forms share on 8-bit x (row_dot_q8.wgsl): a thread takes a whole
// block (dequant/*_wide.wgsl), so x's words stay in order and the thread reads all eight of its x
// block, four at a time.

fn x8_place(i: u32) -> u32 {
    return i;
}

// The integer dot product of a block's 32 weights as 8 words of signed bytes, `lo` holding weights
// 0..16 and `hi` 16..32, with x block x_blk.
fn block32_dot(lo: vec4<u32>, hi: vec4<u32>, x_blk: u32) -> i32 {
    let xa = x8_quad(x_blk, 0u);
    let xb = x8_quad(x_blk, 4u);
    var sum = 0;
    for (var i = 0u; i < 4u; i++) {
        sum += dot4I8Packed(lo[i], xa[i]) + dot4I8Packed(hi[i], xb[i]);
    }
    return sum;
}

// centered_bytes for four words.
fn centered_bytes4(v: vec4<u32>, k: u32) -> vec4<u32> {
    return vec4<u32>(centered_bytes(v.x, k), centered_bytes(v.y, k), centered_bytes(v.z, k),
                     centered_bytes(v.w, k));
}

// A block's 16 bytes of low nibbles `q` with their fifth bits `qh` (bit j for weight j), as bytes
// of 0..31: weights 0..16 (the low nibbles) and 16..32 (the high).
fn fifth_bit_bytes(q: vec4<u32>, qh: u32) -> array<vec4<u32>, 2> {
    var out: array<vec4<u32>, 2>;
    for (var i = 0u; i < 4u; i++) {
        out[0][i] = (q[i] & 0x0f0f0f0fu) | (bit_bytes(qh >> (4u * i)) << 4u);
        out[1][i] = ((q[i] >> 4u) & 0x0f0f0f0fu) | (bit_bytes(qh >> (16u + 4u * i)) << 4u);
    }
    return out;
}

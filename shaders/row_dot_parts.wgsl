// row_dot.wgsl's functions with each block shared by PARTS threads (16 for the K-quants' 256-weight
// blocks, 4 for the 32-weight ones): a row's TPR threads are TPR / PARTS groups, group g taking blocks
// g, g + TPR / PARTS, ..., and thread `part` of a group the 4 PART_X4 weights the dequant file's
// block_part gives it, which lie in x where part_x4 says. The threads of a block read neighbouring
// words of it at once, which a GPU serves in few transactions, where a thread walking a whole block
// (row_dot.wgsl, row_dot_blocks.wgsl) reads 18-210 bytes alone. Each thread decodes the block's header
// (the same words for all). Needs TPR >= PARTS and TPR / PARTS <= the row's blocks to keep every
// thread busy.

// vec4s of x a block covers.
const BLOCK_X4: u32 = BLOCK_LEN / 4u;

fn row_dot(base: u32, x0: u32, cols: u32, lane: u32) -> f32 {
    let part = lane % PARTS;
    var acc = 0.0;
    for (var blk = lane / PARTS; blk < cols / BLOCK_LEN; blk += TPR / PARTS) {
        let b = base + blk * BLOCK_BYTES;
        let w = block_part(b, part);
        for (var j = 0u; j < PART_X4; j++) {
            acc += dot(w[j], x_at(x0, blk * BLOCK_X4 + part_x4(part, j)));
        }
    }
    return acc;
}

fn pair_dot(base: u32, row_bytes: u32, x0: u32, cols: u32, lane: u32) -> vec2<f32> {
    let part = lane % PARTS;
    var acc = vec2<f32>(0.0);
    for (var blk = lane / PARTS; blk < cols / BLOCK_LEN; blk += TPR / PARTS) {
        let b0 = base + blk * BLOCK_BYTES;
        let b1 = b0 + row_bytes;
        let w0 = block_part(b0, part);
        let w1 = block_part(b1, part);
        for (var j = 0u; j < PART_X4; j++) {
            let x = x_at(x0, blk * BLOCK_X4 + part_x4(part, j));
            acc += vec2<f32>(dot(w0[j], x), dot(w1[j], x));
        }
    }
    return acc;
}

// pair_dot for the four rows from byte `base`, `row_bytes` apart: two pairs, each x read once for
// the four.
fn quad_dot(base: u32, row_bytes: u32, x0: u32, cols: u32, lane: u32) -> vec4<f32> {
    let part = lane % PARTS;
    var acc = vec4<f32>(0.0);
    for (var blk = lane / PARTS; blk < cols / BLOCK_LEN; blk += TPR / PARTS) {
        let b0 = base + blk * BLOCK_BYTES;
        let w0 = block_part(b0, part);
        let w1 = block_part(b0 + row_bytes, part);
        let w2 = block_part(b0 + 2u * row_bytes, part);
        let w3 = block_part(b0 + 3u * row_bytes, part);
        for (var j = 0u; j < PART_X4; j++) {
            let x = x_at(x0, blk * BLOCK_X4 + part_x4(part, j));
            acc += vec4<f32>(dot(w0[j], x), dot(w1[j], x), dot(w2[j], x), dot(w3[j], x));
        }
    }
    return acc;
}

// pair_dot for four tokens, whose x start at vec4s x0.x, .y, .z, .w: each weight dequantized once
// for the four. Returns (token 0's two rows, token 1's), (token 2's, token 3's).
fn pair_dot4(base: u32, row_bytes: u32, x0: vec4<u32>, cols: u32, lane: u32) -> array<vec4<f32>, 2> {
    let part = lane % PARTS;
    var a01 = vec4<f32>(0.0);
    var a23 = vec4<f32>(0.0);
    for (var blk = lane / PARTS; blk < cols / BLOCK_LEN; blk += TPR / PARTS) {
        let b0 = base + blk * BLOCK_BYTES;
        let b1 = b0 + row_bytes;
        let w0 = block_part(b0, part);
        let w1 = block_part(b1, part);
        for (var j = 0u; j < PART_X4; j++) {
            let xs = x4_at(x0, blk * BLOCK_X4 + part_x4(part, j));
            let x = xs[0];
            let y = xs[1];
            let z = xs[2];
            let v = xs[3];
            a01 += vec4<f32>(dot(w0[j], x), dot(w1[j], x), dot(w0[j], y), dot(w1[j], y));
            a23 += vec4<f32>(dot(w0[j], z), dot(w1[j], z), dot(w0[j], v), dot(w1[j], v));
        }
    }
    return array<vec4<f32>, 2>(a01, a23);
}

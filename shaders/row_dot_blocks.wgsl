// row_dot.wgsl's functions with a row split by whole blocks: thread `lane` takes blocks lane,
// lane + TPR, ..., reads each block's header once (the dequant file's block_at) and dequantizes its
// sub-blocks from it (block_dequant32). For the K-quants, whose 256-weight blocks carry scales that the
// 32-weight form decodes again for every chunk. Needs TPR <= the row's blocks to keep every thread busy.

const SUBS: u32 = BLOCK_LEN / 32u;

fn row_dot(base: u32, x0: u32, cols: u32, lane: u32) -> f32 {
    var acc = 0.0;
    for (var blk = lane; blk < cols / BLOCK_LEN; blk += TPR) {
        let b = base + blk * BLOCK_BYTES;
        let k = block_at(b);
        for (var sub = 0u; sub < SUBS; sub++) {
            let w = block_dequant32(k, b, sub);
            let j0 = (blk * SUBS + sub) * 8u;
            for (var i = 0u; i < 8u; i++) {
                acc += dot(w[i], x_at(x0, j0 + i));
            }
        }
    }
    return acc;
}

fn pair_dot(base: u32, row_bytes: u32, x0: u32, cols: u32, lane: u32) -> vec2<f32> {
    var acc = vec2<f32>(0.0);
    for (var blk = lane; blk < cols / BLOCK_LEN; blk += TPR) {
        let b0 = base + blk * BLOCK_BYTES;
        let b1 = b0 + row_bytes;
        let k0 = block_at(b0);
        let k1 = block_at(b1);
        for (var sub = 0u; sub < SUBS; sub++) {
            let w0 = block_dequant32(k0, b0, sub);
            let w1 = block_dequant32(k1, b1, sub);
            let j0 = (blk * SUBS + sub) * 8u;
            for (var i = 0u; i < 8u; i++) {
                let x = x_at(x0, j0 + i);
                acc += vec2<f32>(dot(w0[i], x), dot(w1[i], x));
            }
        }
    }
    return acc;
}

// pair_dot for the four rows from byte `base`, `row_bytes` apart: two pairs, each x read once for
// the four.
fn quad_dot(base: u32, row_bytes: u32, x0: u32, cols: u32, lane: u32) -> vec4<f32> {
    var acc = vec4<f32>(0.0);
    for (var blk = lane; blk < cols / BLOCK_LEN; blk += TPR) {
        let b0 = base + blk * BLOCK_BYTES;
        let b1 = b0 + row_bytes;
        let b2 = b1 + row_bytes;
        let b3 = b2 + row_bytes;
        let k0 = block_at(b0);
        let k1 = block_at(b1);
        let k2 = block_at(b2);
        let k3 = block_at(b3);
        for (var sub = 0u; sub < SUBS; sub++) {
            let w0 = block_dequant32(k0, b0, sub);
            let w1 = block_dequant32(k1, b1, sub);
            let w2 = block_dequant32(k2, b2, sub);
            let w3 = block_dequant32(k3, b3, sub);
            let j0 = (blk * SUBS + sub) * 8u;
            for (var i = 0u; i < 8u; i++) {
                let x = x_at(x0, j0 + i);
                acc += vec4<f32>(dot(w0[i], x), dot(w1[i], x), dot(w2[i], x), dot(w3[i], x));
            }
        }
    }
    return acc;
}

// pair_dot for four tokens, whose x start at vec4s x0.x, .y, .z, .w: each weight dequantized once
// for the four. Returns (token 0's two rows, token 1's), (token 2's, token 3's).
fn pair_dot4(base: u32, row_bytes: u32, x0: vec4<u32>, cols: u32, lane: u32) -> array<vec4<f32>, 2> {
    var a01 = vec4<f32>(0.0);
    var a23 = vec4<f32>(0.0);
    for (var blk = lane; blk < cols / BLOCK_LEN; blk += TPR) {
        let b0 = base + blk * BLOCK_BYTES;
        let b1 = b0 + row_bytes;
        let k0 = block_at(b0);
        let k1 = block_at(b1);
        for (var sub = 0u; sub < SUBS; sub++) {
            let w0 = block_dequant32(k0, b0, sub);
            let w1 = block_dequant32(k1, b1, sub);
            let j0 = (blk * SUBS + sub) * 8u;
            for (var i = 0u; i < 8u; i++) {
                let xs = x4_at(x0, j0 + i);
                let x = xs[0];
                let y = xs[1];
                let z = xs[2];
                let v = xs[3];
                a01 += vec4<f32>(dot(w0[i], x), dot(w1[i], x), dot(w0[i], y), dot(w1[i], y));
                a23 += vec4<f32>(dot(w0[i], z), dot(w1[i], z), dot(w0[i], v), dot(w1[i], v));
            }
        }
    }
    return array<vec4<f32>, 2>(a01, a23);
}

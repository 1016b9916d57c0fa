// row_dot_parts.wgsl's split of a row (PARTS threads a block) with x quantized to 8 bits first, as
// llama.cpp's integer matvecs take it: the workgroup quantizes its rows of x once into workgroup
// memory (x_prepare, x_prepare4, x_prepare_rows), a scale per 32 values, and each thread's part of
// a block is then integer dot products of four bytes (the dequant file's block_part_int8) and a
// multiply or two. For the types whose quants are small integers under a scale per 16 or 32 weights
// (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, and MXFP4, whose codes' doubled values are). The
// rounding of x to 8 bits changes the sums' last digits, as in llama.cpp; the tuner offers this
// split beside the f32 ones, which stay where fidelity is asked. The kernel declares WG, TPR and X;
// the pipeline gives XQ_COLS, the row length, and XQ_TOKENS, the rows of x a workgroup reads (its 1
// or 4 tokens', or the chosen experts' slots'). Every row of the workgroup reads the rows of x it
// quantized, so rows that read x in groups (matvec.wgsl's group_stride) do not come here; the
// chosen experts' products do (matvec_id_glu.wgsl's gate and up read the token's one x,
// matvec_id.wgsl's down the slots' x side by side). Needs the type's dequant_q8 file and
// reduce.wgsl (for x_read_sum).

// x quantized, 8 words (32 signed bytes) a block of 32 values, token k's blocks after token k - 1's
// (block blk of token k is x block k XQ_COLS / 32 + blk), word i of x block n at xq[8 n +
// x8_place(i)]: the dequant file places the words so that each part reads two neighbouring ones
// (x8_pair). Then each x block's scale d and d times the sum of its quants.
var<workgroup> xq: array<u32, XQ_TOKENS * XQ_COLS / 4u>;
var<workgroup> xd: array<vec2<f32>, XQ_TOKENS * XQ_COLS / 32u>;

// Words at and at + 1 of x block x_blk as placed.
fn x8_pair(x_blk: u32, at: u32) -> vec2<u32> {
    return vec2<u32>(xq[8u * x_blk + at], xq[8u * x_blk + at + 1u]);
}

// Words at..at + 4 of x block x_blk as placed.
fn x8_quad(x_blk: u32, at: u32) -> vec4<u32> {
    let i = 8u * x_blk + at;
    return vec4<u32>(xq[i], xq[i + 1u], xq[i + 2u], xq[i + 3u]);
}

// Quantizes 32 values of x into x block x_blk: d = max |x| / 127, q = round(x / d).
fn quantize_block(x_blk: u32, v: array<vec4<f32>, 8>) {
    var amax = vec4<f32>(0.0);
    for (var i = 0u; i < 8u; i++) {
        amax = max(amax, abs(v[i]));
    }
    let d = max(max(amax.x, amax.y), max(amax.z, amax.w)) / 127.0;
    let inv = select(0.0, 1.0 / d, d > 0.0);
    var sum = vec4<i32>(0);
    for (var i = 0u; i < 8u; i++) {
        let q = vec4<i32>(round(v[i] * inv));
        xq[8u * x_blk + x8_place(i)] = pack4xI8(q);
        sum += q;
    }
    xd[x_blk] = vec2<f32>(d, d * f32(sum.x + sum.y + sum.z + sum.w));
}

// The vec4 of X where the quantized rows start: a row's x0 less this, over 8, is its first x block.
var<private> xq_start: u32;

// Quantizes the token's row of x (from vec4 x0, read through the x file, which may norm it and count
// its squares), a block of 32 values a thread at a time. Call from uniform control flow, before the
// rows.
fn x_prepare(t: u32, x0: u32, cols: u32) {
    xq_start = x0;
    for (var blk = t; blk < cols / 32u; blk += WG) {
        quantize_x_block(blk, x0, blk);
    }
    workgroupBarrier();
}

// Quantizes block blk (32 values) of the row of x at vec4 x0 into x block x_blk.
fn quantize_x_block(x_blk: u32, x0: u32, blk: u32) {
    var v: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        v[i] = x_at(x0, blk * 8u + i);
    }
    quantize_block(x_blk, v);
}

// x_prepare for four tokens, whose rows start at vec4s x0.x, .y, .z, .w.
fn x_prepare4(t: u32, x0: vec4<u32>, cols: u32) {
    for (var blk = t; blk < cols / 32u; blk += WG) {
        var v: array<mat4x4<f32>, 8>;
        for (var i = 0u; i < 8u; i++) {
            v[i] = x4_at(x0, blk * 8u + i);
        }
        for (var k = 0u; k < 4u; k++) {
            var token: array<vec4<f32>, 8>;
            for (var i = 0u; i < 8u; i++) {
                token[i] = v[i][k];
            }
            quantize_block(k * (cols / 32u) + blk, token);
        }
    }
    workgroupBarrier();
}

// x_prepare for the XQ_TOKENS rows of x at vec4s 0, stride, 2 stride, ...: the chosen experts' slots'
// x, side by side (stride cols / 4), or the token's one (stride 0, one row).
fn x_prepare_rows(t: u32, stride: u32, cols: u32) {
    xq_start = 0u;
    let blocks = cols / 32u;
    for (var i = t; i < XQ_TOKENS * blocks; i += WG) {
        quantize_x_block(i, (i / blocks) * stride, i % blocks);
    }
    workgroupBarrier();
}

// The threads that read x once for a row: here the workgroup, which quantized it together.
fn x_read_sum(t: u32, v: f32) -> f32 {
    return reduce_sum(t, v);
}

// x_read_sum of four tokens' values.
fn x_read_sum4(t: u32, v: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(reduce_sum(t, v.x), reduce_sum(t, v.y), reduce_sum(t, v.z), reduce_sum(t, v.w));
}

// This thread's part of dot(W row at byte `base`, x): the row's TPR threads are TPR / PARTS groups,
// group g taking blocks g, g + TPR / PARTS, ..., thread `part` of a group part `part` of each.
fn row_dot(base: u32, x0: u32, cols: u32, lane: u32) -> f32 {
    let part = lane % PARTS;
    let x_first = (x0 - xq_start) / 8u;
    var acc = 0.0;
    for (var blk = lane / PARTS; blk < cols / BLOCK_LEN; blk += TPR / PARTS) {
        acc += block_part_int8(base + blk * BLOCK_BYTES, part, x_first + blk * (BLOCK_LEN / 32u));
    }
    return acc;
}

// row_dot for the rows at bytes `base` and `base + row_bytes`.
fn pair_dot(base: u32, row_bytes: u32, x0: u32, cols: u32, lane: u32) -> vec2<f32> {
    let part = lane % PARTS;
    let x_first = (x0 - xq_start) / 8u;
    var acc = vec2<f32>(0.0);
    for (var blk = lane / PARTS; blk < cols / BLOCK_LEN; blk += TPR / PARTS) {
        let b = base + blk * BLOCK_BYTES;
        let x_blk = x_first + blk * (BLOCK_LEN / 32u);
        acc += vec2<f32>(block_part_int8(b, part, x_blk), block_part_int8(b + row_bytes, part, x_blk));
    }
    return acc;
}

// row_dot for the four rows from byte `base`, `row_bytes` apart: two pairs.
fn quad_dot(base: u32, row_bytes: u32, x0: u32, cols: u32, lane: u32) -> vec4<f32> {
    let part = lane % PARTS;
    let x_first = (x0 - xq_start) / 8u;
    var acc = vec4<f32>(0.0);
    for (var blk = lane / PARTS; blk < cols / BLOCK_LEN; blk += TPR / PARTS) {
        let b = base + blk * BLOCK_BYTES;
        let x_blk = x_first + blk * (BLOCK_LEN / 32u);
        acc += vec4<f32>(block_part_int8(b, part, x_blk), block_part_int8(b + row_bytes, part, x_blk),
                         block_part_int8(b + 2u * row_bytes, part, x_blk),
                         block_part_int8(b + 3u * row_bytes, part, x_blk));
    }
    return acc;
}

// pair_dot for the four tokens x_prepare4 quantized. Returns (token 0's two rows, token 1's),
// (token 2's, token 3's).
fn pair_dot4(base: u32, row_bytes: u32, x0: vec4<u32>, cols: u32, lane: u32) -> array<vec4<f32>, 2> {
    let part = lane % PARTS;
    let token_blocks = cols / 32u;
    var a01 = vec4<f32>(0.0);
    var a23 = vec4<f32>(0.0);
    for (var blk = lane / PARTS; blk < cols / BLOCK_LEN; blk += TPR / PARTS) {
        let b0 = base + blk * BLOCK_BYTES;
        let b1 = b0 + row_bytes;
        let x_blk = blk * (BLOCK_LEN / 32u);
        let x1 = x_blk + token_blocks;
        let x2 = x1 + token_blocks;
        let x3 = x2 + token_blocks;
        a01 += vec4<f32>(block_part_int8(b0, part, x_blk), block_part_int8(b1, part, x_blk),
                         block_part_int8(b0, part, x1), block_part_int8(b1, part, x1));
        a23 += vec4<f32>(block_part_int8(b0, part, x2), block_part_int8(b1, part, x2),
                         block_part_int8(b0, part, x3), block_part_int8(b1, part, x3));
    }
    return array<vec4<f32>, 2>(a01, a23);
}

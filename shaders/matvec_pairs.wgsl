// W x for kernels that combine rows in pairs (2p, 2p+1): gate and up rows interleaved for SwiGLU, the
// two dimensions RoPE rotates together. As matvec.wgsl otherwise: a workgroup of WG threads takes
// WG / TPR slots of a pair, and the TPR threads of a slot split its rows as the row_dot file says,
// reading each x once for both rows; in a run of one token a slot may take two pairs (`PAIRS`), each
// x then read once for the four rows. One layer of workgroups (z) per TOKENS tokens of the run: one,
// or four (a decode step of several sequences), each weight then dequantized once for the four, or
// eight, each workgroup taking the first four and then the next, whose weights come from the caches
// the first four left them in (where a second layer would read them from memory again). The store
// file declares Params (with rows, cols and row_bytes) and the outputs, and defines store_pair. x is
// read as the x file says: as it is (x_rows.wgsl), or normed by RMSNorm on the way in
// (x_rms_norm.wgsl), each sum then scaled by x_scale. In a run of several tokens, what a slot of TPR
// threads takes is the slot file's: a pair (slot_pair.wgsl) or four (slot_eight_rows.wgsl). Needs
// step.wgsl, an x file, a row_dot file, a slot file and a row_sum file.

// W's words, one by one or as vec4s (where a block's parts load a vec4 each): the words file's
// WeightWord (shaders/dequant/words.wgsl, words_vec4.wgsl).
@group(0) @binding(0) var<storage, read> W: array<WeightWord>;     // (rows, row_bytes / 4) words
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;      // (batch, cols / 4)
@group(0) @binding(2) var<storage, read> step: Step;

override WG: u32 = 64u;
override TPR: u32 = 64u; // threads per pair, a power of two dividing WG
override TOKENS: u32 = 1u; // 1, 4 or 8
override PAIRS: u32 = 1u; // pairs a slot of TPR threads takes in a run of one token: 1 or 2

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    if (TOKENS > 1u) {
        for (var four = 0u; four < TOKENS / 4u; four++) {
            if (four > 0u) {
                // The first four's last sums are read before the next four's are written.
                workgroupBarrier();
                x_restart();
            }
            four_tokens(wg.z * TOKENS + 4u * four, wg, nwg, t);
        }
        return;
    }
    let token = wg.z;
    if (token >= step.n_tokens) {
        return;
    }
    x_prepare(t, token * (P.cols / 4u), P.cols);
    let pair = ((wg.x + wg.y * nwg.x) * (WG / TPR) + t / TPR) * PAIRS;
    // An odd last row (a part of a plain matrix) pairs with what follows it; store_pair drops that.
    let pairs = (P.rows + 1u) / 2u;
    let in_range = pair < pairs;
    if (PAIRS == 2u) {
        // A second pair past the matrix reads what follows it and is not stored.
        var acc4 = vec4<f32>(0.0);
        if (in_range) {
            acc4 = quad_dot(2u * pair * P.row_bytes, P.row_bytes, token * (P.cols / 4u), P.cols, t % TPR);
        }
        let sums = quad_sum(t, acc4) * x_scale(t, P.cols);
        if (t % TPR == 0u && in_range) {
            store_pair(token, 2u * pair, sums.x, sums.y);
            if (pair + 1u < pairs) {
                store_pair(token, 2u * pair + 2u, sums.z, sums.w);
            }
        }
        return;
    }
    var acc = vec2<f32>(0.0);
    if (in_range) {
        acc = pair_dot(2u * pair * P.row_bytes, P.row_bytes, token * (P.cols / 4u), P.cols, t % TPR);
    }
    let sum = pair_sum(t, acc) * x_scale(t, P.cols);
    if (t % TPR == 0u && in_range) {
        store_pair(token, 2u * pair, sum.x, sum.y);
    }
}

// main for the four tokens from token0.
fn four_tokens(token0: u32, wg: vec3<u32>, nwg: vec3<u32>, t: u32) {
    if (token0 >= step.n_tokens) {
        return;
    }
    // Tokens past the run read the last one's x; their sums are not stored.
    let last = step.n_tokens - 1u;
    let row_x = P.cols / 4u;
    let x0 = vec4<u32>(token0, min(token0 + 1u, last), min(token0 + 2u, last), min(token0 + 3u, last)) * row_x;
    x_prepare4(t, x0, P.cols);
    let slot = (wg.x + wg.y * nwg.x) * (WG / TPR) + t / TPR;
    slot_four_tokens(token0, x0, slot, t);
}

// Stores a pair's sums for four tokens from token0 (pair_dot4's order), scaled by x_scale4's, from
// the first thread of the pair's slot. An odd last row (a part of a plain matrix) pairs with what
// follows it, and store_pair drops that; pairs past it and tokens past the run are not stored.
fn store_four(token0: u32, pair: u32, sums: array<vec4<f32>, 2>, scale: vec4<f32>, t: u32) {
    if (t % TPR != 0u || pair >= (P.rows + 1u) / 2u) {
        return;
    }
    let last = step.n_tokens - 1u;
    let a = sums[0] * scale.xxyy;
    let b = sums[1] * scale.zzww;
    store_pair(token0, 2u * pair, a.x, a.y);
    if (token0 + 1u <= last) { store_pair(token0 + 1u, 2u * pair, a.z, a.w); }
    if (token0 + 2u <= last) { store_pair(token0 + 2u, 2u * pair, b.x, b.y); }
    if (token0 + 3u <= last) { store_pair(token0 + 3u, 2u * pair, b.z, b.w); }
}

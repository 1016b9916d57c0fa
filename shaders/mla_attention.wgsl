// Multi-head Latent Attention in absorbed form, which is multi-query attention over the latent cache:
// a head's query is its no-rope part taken into the latent space (QA, by k_b) followed by its rope
// part, rotated here at the token's position; every head's key is a whole cache row (normed latent,
// rotated rope part) and its value the row's latent. One workgroup per (group of up to 4 heads, TQ
// consecutive tokens) of the run, each token over the cache up to its own position (causal), by
// attend.wgsl's online softmax, which reads each row once for the group and the TQ tokens (a
// prompt's chunk on a GPU takes as many as the queries' workgroup memory allows,
// `ops::mla::push_attention`; a step one); no scores are stored. The output stays in the latent
// space (v_b takes it out). Deep into a context one token's keys are split too (flash-decoding,
// P.n_split of them): workgroup (group, token, s) takes split s of the token's keys and writes its
// heads' partial states to O as attention_split.wgsl does, for attention_merge.wgsl. Needs step.wgsl,
// key_range.wgsl, rope.wgsl, head_group.wgsl, key_walk.wgsl, attend.wgsl and mla_bindings.wgsl.

const MAX_KEY: u32 = 640u; // kv_lora (at most 4 * WG) + n_rot (at most 128)

override WG: u32 = 128u;
// The queries of the tile's tokens, head g of token q at (q * GROUP + g) * MAX_KEY / 4: latent, then
// rope part.
var<workgroup> Q: array<vec4<f32>, TQ * GROUP * MAX_KEY / 4u>;

fn query(q: u32, g: u32, i: u32) -> vec4<f32> {
    return Q[(q * GROUP + g) * (MAX_KEY / 4u) + i];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let group = head_group(wg.x, P.n_head);
    let split = P.n_split > 0u; // then TQ is 1 and wg.z the split
    let first = wg.y * TQ;
    if (first >= step.n_tokens) {
        return;
    }
    let tokens = min(TQ, step.n_tokens - first);
    // Tokens past the run attend to nothing: an empty range where the first token's starts.
    var ranges: array<vec2<u32>, TQ>;
    for (var q = 0u; q < TQ; q++) {
        let token = first + min(q, tokens - 1u);
        let turn = step.tokens[token].turn;
        ranges[q] = vec2<u32>(step.tokens[token].base, cache_row(token) + 1u);
        if (q >= tokens) {
            ranges[q] = vec2<u32>(ranges[0].x, ranges[0].x);
        }
        for (var g = 0u; g < group.y; g++) {
            let head = token * P.n_head + group.x + g;
            let at = (q * GROUP + g) * (MAX_KEY / 4u);
            for (var i = t; i < P.kv_lora / 4u; i += WG) {
                let a = head * P.kv_lora + 4u * i;
                Q[at + i] = vec4<f32>(QA[a], QA[a + 1u], QA[a + 2u], QA[a + 3u]);
            }
            let qr = head * P.q_stride + P.q_rope;
            for (var i = t; i < P.rope.n_rot / 2u; i += WG) {
                let j = rope_pair(P.rope, i);
                let cs = rope_cos_sin(P.rope, turn, i, freqs[i]);
                let x0 = QR[qr + j.x];
                let x1 = QR[qr + j.y];
                let a = P.kv_lora + j.x;
                let b = P.kv_lora + j.y;
                Q[at + a / 4u][a % 4u] = x0 * cs.x - x1 * cs.y;
                Q[at + b / 4u][b % 4u] = x0 * cs.y + x1 * cs.x;
            }
        }
    }
    workgroupBarrier();
    if (split) {
        // Whole blocks of WG keys a split, so that few splits are partly filled.
        ranges[0] = split_range(first, wg.z, P.n_split, 0u, WG);
    }

    let width = P.kv_lora + P.rope.n_rot;
    let keys = Keys(width, 0u, width, P.kv_lora);
    let r = attend(keys, group.y, ranges, tokens, t);
    if (split) {
        let heads = vec2<u32>(first * P.n_head + group.x, group.y);
        store_split(r, 0u, heads, wg.z, P.n_split, P.kv_lora, t);
        return;
    }
    for (var q = 0u; q < tokens; q++) {
        for (var g = 0u; g < group.y; g++) {
            let o = ((first + q) * P.n_head + group.x + g) * P.kv_lora;
            for (var i = 0u; i < 4u; i++) {
                let dim = t + i * WG;
                if (dim < P.kv_lora) {
                    O[o + dim] = r.acc[q][i][g] / r.l[q][g];
                }
            }
        }
    }
}

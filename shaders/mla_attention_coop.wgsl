// Multi-head Latent Attention of a prompt's chunk on the adapter's matrix cores (cooperative
// matrices), in absorbed form: multi-query attention whose every head's key is a whole cache row (the
// normed latent, then the rotated rope part, KL + NR values) and whose value is the row's latent. Since
// all heads share the keys, a workgroup takes S rows of queries, row r of the run being head r % n_head
// of token r / n_head: a prompt's chunk, workgroup (x, y) rows from (y n_head + x) S, across tokens
// where n_head is not a multiple of S. A step deep into a context splits each token's keys P.n_split
// ways (flash-decoding): workgroup (x, token, s) takes heads from x S of the token (those past its
// heads idle) over split s of its keys, and writes their partial states to O as
// attention_split.wgsl does, for attention_merge.wgsl. A row's query is its head's no-rope part taken
// into the latent space (QA, by k_b), then its rope part (QR) rotated at the token's position, all
// scaled and held as f16.
//
// Per tile of BK cache rows: the rows go into workgroup memory as f16; the scores (S rows by BK keys)
// are a product over the row's KL + NR values, which the SUBGROUPS subgroups share out (each holds
// its share of the queries' matrices in registers from the start, and leaves its part of the scores
// in workgroup memory); a thread a row then sums the parts and takes the row's max, range and softmax
// weights (f16, into workgroup memory); each subgroup adds the weights times the tile's latents (the
// values, the same rows) to its share of the output's matrices, held in f32 registers across the
// tiles. A cache row is read once for the workgroup's S rows, and once for both products.
//
// As in attention_coop.wgsl, the outputs are rescaled only when a row's reference max moves
// (tile_weights.wgsl).
//
// Its bindings and parameters are mla_attention.wgsl's (mla_bindings.wgsl). The prelude
// enables f16 and wgpu_cooperative_matrix and sets S, MatA, MatB and MatC; the pipeline sets KL and
// NR (multiples of S) and BK (a multiple of S). WG is SUBGROUPS subgroups of the adapter's widest, at
// least S lanes each; where the driver runs narrower ones, those past SUBGROUPS help with the loads
// and stores only. Needs step.wgsl, key_range.wgsl, key_walk.wgsl, key_union.wgsl, rope.wgsl,
// tile_weights.wgsl and mla_bindings.wgsl.

const SUBGROUPS: u32 = 4u;
const D: u32 = KL + NR;                              // a cache row's values
const DM: u32 = D / S;                               // matrices across a row
const DMS: u32 = (DM + SUBGROUPS - 1u) / SUBGROUPS;  // a subgroup's share of them
const VM: u32 = KL / S;                              // matrices across a value
const VMS: u32 = (VM + SUBGROUPS - 1u) / SUBGROUPS;  // a subgroup's share of them
const KM: u32 = BK / S;                              // matrices across a tile's keys
// Row strides, 16 bytes past a multiple of 64 for f16 where D is a multiple of 32 (aligned for the
// matrix loads, and not every row in one bank). The tile holds its f16 four to a vec4, so that a
// thread stores four at once; the matrices load from it in those units (strides and offsets in
// vec4s), as SPIR-V's cooperative loads take a vector array.
const KS: u32 = D + 8u;
const KS4: u32 = KS / 4u;
const PS: u32 = BK + 8u;
// The scores' rows 4 floats longer than a tile: a thread walks its row, and rows a multiple of 32
// floats apart would put the threads of a subgroup in one bank.
const SS: u32 = BK + 4u;
// Rows the tile holds: BK, or S at the start, when it carries the queries.
const KV_ROWS: u32 = max(BK, S);

override WG: u32 = 128u;

var<workgroup> kv_tile: array<vec4<f16>, KV_ROWS * KS4>;     // [row][value]: the queries, then keys
var<workgroup> scores: array<f32, SUBGROUPS * S * SS>;       // [subgroup][row][key]; outputs on their way
var<workgroup> weights: array<f16, S * PS>;                  // [row][key]
var<workgroup> row_factor: array<f32, S>;                    // each row's rescale, at the end its 1 / sum
var<workgroup> rescale_any: u32;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
) {
    let split = P.n_split > 0u;
    if (select(row_of(wg, 0u).x >= step.n_tokens * P.n_head, wg.y >= step.n_tokens, split)) {
        return;
    }
    let multiplies = sg < SUBGROUPS;
    let part = min(sg, SUBGROUPS - 1u); // the subgroup's share of the matrices

    // Thread r < S keeps row r's range, reference max and sum.
    let r = min(lid, S - 1u);
    let token = row_of(wg, r).y / P.n_head;
    var range = vec2<u32>(step.tokens[token].base, cache_row(token) + 1u);
    if (split) {
        // Whole tiles a split, so that few splits are partly filled.
        range = split_range(token, wg.z, P.n_split, 0u, BK);
    }
    key_union_open(lid);
    key_union_add(range);
    key_union_middle();
    key_union_add_before(range);
    var m = -3.0e38;
    var l = 0.0;
    if (lid == 0u) {
        rescale_any = 0u;
    }

    // The queries, scaled, through the tile into the subgroups' matrices.
    for (var i = lid; i < S * D / 4u; i += WG) {
        let q = i / (D / 4u);
        let c = 4u * (i % (D / 4u));
        let row = row_of(wg, q).y;
        var x: vec4<f32>;
        if (c < KL) {
            let a = row * P.kv_lora + c;
            x = vec4<f32>(QA[a], QA[a + 1u], QA[a + 2u], QA[a + 3u]);
        } else {
            let turn = step.tokens[row / P.n_head].turn;
            let qr = row * P.q_stride + P.q_rope;
            for (var k = 0u; k < 4u; k++) {
                x[k] = rotated(qr, c + k - KL, turn);
            }
        }
        kv_tile[q * KS4 + c / 4u] = vec4<f16>(x * P.scale);
    }
    let keys = key_union_close(lid); // its barrier: the queries are in
    var q: array<MatA, DMS>;
    var o: array<MatC, VMS>;
    for (var d = 0u; d < DMS; d++) {
        let dm = part * DMS + d;
        if (multiplies && dm < DM) {
            q[d] = coopLoadT<MatA>(&kv_tile[dm * S / 4u], KS4);
        }
    }
    for (var v = 0u; v < VMS; v++) {
        o[v] = MatC();
    }
    workgroupBarrier(); // the queries are read before the first keys go in

    for (var start = keys.x; start < keys.w; start = key_walk_next(keys, start, BK)) {
        load_tile(lid, start, key_walk_end(keys, start));
        workgroupBarrier();
        if (multiplies) {
            // This subgroup's part of each block of scores: its share of the rows' values.
            for (var k = 0u; k < KM; k++) {
                var s = MatC();
                for (var d = 0u; d < DMS; d++) {
                    let dm = part * DMS + d;
                    if (dm < DM) {
                        let kt = coopLoad<MatB>(&kv_tile[(k * S * KS + dm * S) / 4u], KS4);
                        s = coopMultiplyAdd(q[d], kt, s);
                    }
                }
                coopStoreT(s, &scores[part * S * SS + k * S], SS);
            }
        }
        workgroupBarrier(); // the scores' parts are in

        if (lid < S) {
            // Row lid's weights for the tile against its reference max, its scores the sum of
            // the subgroups' parts.
            for (var j = 0u; j < BK; j++) {
                var score = 0.0;
                for (var p = 0u; p < SUBGROUPS; p++) {
                    score += scores[(p * S + lid) * SS + j];
                }
                scores[lid * SS + j] = score;
            }
            weigh_tile(lid, start, key_walk_sees(keys, start, range), &m, &l);
        }
        if (workgroupUniformLoad(&rescale_any) != 0u) {
            rescale_outputs(lid, part, multiplies, &o);
            if (lid == 0u) {
                rescale_any = 0u; // read by all before the next tile's weights, past two barriers
            }
        }
        workgroupBarrier(); // the weights are in (past a rescale: the same)
        if (multiplies) {
            // This subgroup's share of the output: the weights times the rows' latents.
            for (var k = 0u; k < KM; k++) {
                let w = coopLoadT<MatA>(&weights[k * S], PS);
                for (var v = 0u; v < VMS; v++) {
                    let vm = part * VMS + v;
                    if (vm < VM) {
                        let x = coopLoadT<MatB>(&kv_tile[(k * S * KS + vm * S) / 4u], KS4);
                        o[v] = coopMultiplyAdd(w, x, o[v]);
                    }
                }
            }
        }
        workgroupBarrier(); // the tile is read before the next one goes in
    }

    if (lid < S) {
        // A split's outputs stay unnormalized (its max and weight beside them, for the merge).
        row_factor[lid] = select(select(0.0, 1.0 / l, l > 0.0), 1.0, split);
        let row = row_of(wg, lid);
        if (split && row.x != NO_ROW) {
            let at = (row.x * P.n_split + wg.z) * (KL + 2u) + KL;
            O[at] = m;
            O[at + 1u] = l;
        }
    }
    // The outputs leave through `scores`, a matrix of each subgroup's share at a time.
    for (var v = 0u; v < VMS; v++) {
        if (multiplies) {
            coopStoreT(o[v], &scores[part * S * SS], SS);
        }
        workgroupBarrier();
        for (var i = lid; i < SUBGROUPS * S * S / 4u; i += WG) {
            let p = i / (S * S / 4u);
            let q = (i / (S / 4u)) % S;
            let c = 4u * (i % (S / 4u));
            let vm = p * VMS + v;
            let at = (p * S + q) * SS + c;
            let row = row_of(wg, q).x;
            if (vm < VM && row != NO_ROW) {
                let out = vec4<f32>(scores[at], scores[at + 1u], scores[at + 2u], scores[at + 3u]);
                var o_at = row * KL + vm * S + c;
                if (split) {
                    o_at = (row * P.n_split + wg.z) * (KL + 2u) + vm * S + c;
                }
                for (var k = 0u; k < 4u; k++) {
                    O[o_at + k] = out[k] * row_factor[q];
                }
            }
        }
        workgroupBarrier(); // read before the next matrices go in
    }
}

// Marks a workgroup's row that is none of the run's (past its last, or past a token's heads).
const NO_ROW: u32 = 0xffffffffu;

// The workgroup's row r: x its row of the run's (token n_head + head), NO_ROW where it has none; y
// the run's row it reads its query and key range from (its own, or the nearest before it that is
// the run's).
fn row_of(wg: vec3<u32>, r: u32) -> vec2<u32> {
    let rows = step.n_tokens * P.n_head;
    if (P.n_split > 0u) {
        let head = wg.x * S + r;
        let row = wg.y * P.n_head + min(head, P.n_head - 1u);
        return vec2<u32>(select(NO_ROW, row, head < P.n_head), row);
    }
    let row = (wg.y * P.n_head + wg.x) * S + r;
    return vec2<u32>(select(NO_ROW, row, row < rows), min(row, rows - 1u));
}

// Value `d` of a row's rope part, the row's query in QR from `qr`, rotated at position `turn`: each
// of a pair's two values from both of the pair's.
fn rotated(qr: u32, d: u32, turn: u32) -> f32 {
    let pair = rope_pair_of(P.rope, d);
    let j = rope_pair(P.rope, pair.x);
    let cs = rope_cos_sin(P.rope, turn, pair.x, freqs[pair.x]);
    let x0 = QR[qr + j.x];
    let x1 = QR[qr + j.y];
    return select(x0 * cs.y + x1 * cs.x, x0 * cs.x - x1 * cs.y, pair.y == 1u);
}

// The cache rows from `start`, as f16; zeros past `end`: every row of the tile is multiplied in (by
// a weight of 0 where unseen), and workgroup memory is not cleared between pipelines.
fn load_tile(lid: u32, start: u32, end: u32) {
    for (var i = lid; i < BK * D / 4u; i += WG) {
        var x = vec4<f32>(0.0);
        let p = start + i / (D / 4u);
        if (p < end) {
            x = kv4(KC[p * (D / 4u) + i % (D / 4u)]);
        }
        kv_tile[(i / (D / 4u)) * KS4 + i % (D / 4u)] = vec4<f16>(x);
    }
    // The values are KC's rows: VC is bound for the streaming form's sake, and read here only so
    // that the two forms share a layout.
    if (lid == WG) {
        _ = VC[0];
    }
}

// Each subgroup's output matrices times their rows' factors, through `scores`, a matrix at a time.
fn rescale_outputs(lid: u32, part: u32, multiplies: bool, o: ptr<function, array<MatC, VMS>>) {
    for (var v = 0u; v < VMS; v++) {
        if (multiplies) {
            coopStoreT((*o)[v], &scores[part * S * SS], SS);
        }
        workgroupBarrier();
        for (var i = lid; i < SUBGROUPS * S * SS; i += WG) {
            scores[i] *= row_factor[(i / SS) % S];
        }
        workgroupBarrier();
        if (multiplies) {
            (*o)[v] = coopLoadT<MatC>(&scores[part * S * SS], SS);
        }
        workgroupBarrier();
    }
}

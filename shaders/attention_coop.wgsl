// Attention of a run's queries in tiles (flash attention) on the adapter's matrix cores (cooperative
// matrices): a workgroup takes one head of BQ consecutive tokens' queries, SUBGROUPS blocks of S
// queries, a subgroup each. Per tile of BK keys: the keys go into workgroup memory as f16, each
// subgroup multiplies its queries (f16, held in matrix registers from the start) by them into f32
// scores, which leave through workgroup memory; a thread a query then takes its row's max, soft-cap,
// range and softmax weights (f16, into workgroup memory) while the workgroup loads the tile's values
// over the keys; each subgroup then adds its weights times the values to its output, held in f32
// matrix registers across the tiles.
//
// The outputs are rescaled only when a query's reference max moves (tile_weights.wgsl).
//
// Same ranges, soft-capping and sinks as attention_tiled.wgsl. q head h reads kv head
// h / (n_head / n_kv_head). The prelude enables f16 and wgpu_cooperative_matrix and sets S, MatA, MatB
// and MatC; the pipeline sets HD (a head's dims, a multiple of S) and BK (keys a tile, a multiple of
// S). WG is SUBGROUPS subgroups of the adapter's widest, at least S lanes each; where the driver runs
// narrower ones, those past SUBGROUPS help with the loads and stores only. Needs step.wgsl,
// key_range.wgsl, key_walk.wgsl, key_union.wgsl, attention_params.wgsl, attention_chunk.wgsl and
// tile_weights.wgsl.

const SUBGROUPS: u32 = 4u;
const BQ: u32 = SUBGROUPS * S;  // queries a workgroup
const HD4: u32 = HD / 4u;
const DM: u32 = HD / S;         // matrices across a head
const KM: u32 = BK / S;         // matrices across a tile's keys
// Row strides, 16 bytes past a multiple of 64 for f16 (aligned for the matrix loads, and not every
// row in one bank). The tile of keys or values holds its f16 four to a vec4, so that a thread stores
// four at once; the matrices load from it in those units (strides and offsets in vec4s), as SPIR-V's
// cooperative loads take a vector array.
const KS: u32 = HD + 8u;
const KS4: u32 = KS / 4u;
const PS: u32 = BK + 8u;
// The scores' rows 4 floats longer than a tile: a thread walks its query's row, and rows a multiple
// of 32 floats apart would put the threads of a subgroup in one bank.
const SS: u32 = BK + 4u;
// Rows the tile of keys or values holds: BK, or BQ at the start, when it carries the queries.
const KV_ROWS: u32 = max(BK, BQ);

override WG: u32 = 128u;

var<workgroup> kv_tile: array<vec4<f16>, KV_ROWS * KS4>; // [key][dim]: the queries, then keys or values
var<workgroup> scores: array<f32, BQ * SS>;         // [query][key]; a subgroup's outputs on their way
var<workgroup> weights: array<f16, BQ * PS>;        // [query][key]
var<workgroup> row_factor: array<f32, BQ>;          // each query's rescale, at the end its 1 / sum
var<workgroup> rescale_any: u32;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
) {
    let h = wg.x;
    let t0 = wg.y * BQ;
    if (t0 >= step.n_tokens) {
        return;
    }
    let kv = h / (P.n_head / P.n_kv_head);
    let multiplies = sg < SUBGROUPS;
    let q0 = min(sg, SUBGROUPS - 1u) * S; // the subgroup's first query in the workgroup

    // Thread r < BQ keeps query r's range, reference max and sum. Queries past the run attend as
    // the run's last and store nothing.
    let r = min(lid, BQ - 1u);
    let token = min(t0 + r, step.n_tokens - 1u);
    let range = key_range(token, P.causal != 0u, P.window, P.both_ways_from);
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
    for (var i = lid; i < BQ * HD4; i += WG) {
        let t = min(t0 + i / HD4, step.n_tokens - 1u);
        put4(i / HD4, i % HD4, Q[(t * P.n_head + h) * HD4 + i % HD4] * P.scale);
    }
    let keys = key_union_close(lid); // its barrier: the queries are in
    var q: array<MatA, DM>;
    var o: array<MatC, DM>;
    for (var d = 0u; d < DM; d++) {
        if (multiplies) {
            q[d] = coopLoadT<MatA>(&kv_tile[(q0 * KS + d * S) / 4u], KS4);
        }
        o[d] = MatC();
    }
    workgroupBarrier(); // the queries are read before the first keys go in

    for (var start = keys.x; start < keys.w; start = key_walk_next(keys, start, BK)) {
        let end = key_walk_end(keys, start);
        load_tile(lid, start, end, kv, true);
        workgroupBarrier();
        if (multiplies) {
            for (var k = 0u; k < KM; k++) {
                var s = MatC();
                for (var d = 0u; d < DM; d++) {
                    let kt = coopLoad<MatB>(&kv_tile[(k * S * KS + d * S) / 4u], KS4);
                    s = coopMultiplyAdd(q[d], kt, s);
                }
                coopStoreT(s, &scores[q0 * SS + k * S], SS);
            }
        }
        workgroupBarrier(); // the scores are in, and the keys read

        if (lid < BQ) {
            // Query lid's weights for the tile against its reference max, its scores soft-capped.
            if (P.softcap > 0.0) {
                for (var j = 0u; j < BK; j++) {
                    let score = scores[lid * SS + j];
                    scores[lid * SS + j] = P.softcap * tanh(score / P.softcap);
                }
            }
            weigh_tile(lid, start, key_walk_sees(keys, start, range), &m, &l);
        }
        load_tile(lid, start, end, kv, false);
        if (workgroupUniformLoad(&rescale_any) != 0u) {
            rescale_outputs(lid, q0, multiplies, &o);
            if (lid == 0u) {
                rescale_any = 0u; // read by all before the next tile's weights, past two barriers
            }
        }
        workgroupBarrier(); // the values and the weights are in (past a rescale: the same)
        if (multiplies) {
            for (var k = 0u; k < KM; k++) {
                let w = coopLoadT<MatA>(&weights[q0 * PS + k * S], PS);
                for (var d = 0u; d < DM; d++) {
                    let v = coopLoadT<MatB>(&kv_tile[(k * S * KS + d * S) / 4u], KS4);
                    o[d] = coopMultiplyAdd(w, v, o[d]);
                }
            }
        }
        workgroupBarrier(); // the tile is read before the next one goes in
    }

    if (lid < BQ) {
        let sunk = with_sink(h, m, l);
        row_factor[lid] = select(0.0, sunk.x / sunk.y, sunk.y > 0.0);
    }
    // The outputs leave through `scores`, KM matrices of a subgroup's rows at a time.
    for (var d0 = 0u; d0 < DM; d0 += KM) {
        if (multiplies) {
            for (var k = 0u; k < KM && d0 + k < DM; k++) {
                coopStoreT(o[d0 + k], &scores[q0 * SS + k * S], SS);
            }
        }
        workgroupBarrier();
        let dims = min(BK, HD - d0 * S);
        for (var i = lid; i < BQ * dims / 4u; i += WG) {
            let row = i / (dims / 4u);
            let c = 4u * (i % (dims / 4u));
            let at = row * SS + c;
            let out = vec4<f32>(scores[at], scores[at + 1u], scores[at + 2u], scores[at + 3u]);
            if (t0 + row < step.n_tokens) {
                let o_at = ((t0 + row) * P.n_head + h) * HD4 + (d0 * S + c) / 4u;
                O[o_at] = out * row_factor[row];
            }
        }
        workgroupBarrier(); // read before the next matrices go in
    }
}

// Stores a vec4 of a row of the tile as f16.
fn put4(row: u32, c4: u32, x: vec4<f32>) {
    kv_tile[row * KS4 + c4] = vec4<f16>(x);
}

// The keys (or values) from `start`, as f16; zeros past `end`: every key of the tile is multiplied in
// (by a weight of 0 where unseen), and workgroup memory is not cleared between pipelines.
fn load_tile(lid: u32, start: u32, end: u32, kv: u32, keys: bool) {
    for (var i = lid; i < BK * HD4; i += WG) {
        var x = vec4<f32>(0.0);
        let p = start + i / HD4;
        if (p < end) {
            let at = (p * P.n_kv_head + kv) * HD4 + i % HD4;
            if (keys) {
                x = kv4(KC[at]);
            } else {
                x = kv4(VC[at]);
            }
        }
        put4(i / HD4, i % HD4, x);
    }
}

// Each subgroup's output rows times their queries' factors, through `scores`, KM matrices at a time.
fn rescale_outputs(lid: u32, q0: u32, multiplies: bool, o: ptr<function, array<MatC, DM>>) {
    for (var d0 = 0u; d0 < DM; d0 += KM) {
        if (multiplies) {
            for (var k = 0u; k < KM && d0 + k < DM; k++) {
                coopStoreT((*o)[d0 + k], &scores[q0 * SS + k * S], SS);
            }
        }
        workgroupBarrier();
        for (var i = lid; i < BQ * SS; i += WG) {
            scores[i] *= row_factor[i / SS];
        }
        workgroupBarrier();
        if (multiplies) {
            for (var k = 0u; k < KM && d0 + k < DM; k++) {
                (*o)[d0 + k] = coopLoadT<MatC>(&scores[q0 * SS + k * S], SS);
            }
        }
        workgroupBarrier();
    }
}

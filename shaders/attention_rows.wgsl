// Attention of a run's queries in tiles (flash attention), shaped for GPUs: a workgroup takes one head
// of BR consecutive tokens' queries, and each query's head is split over DS neighbouring threads of a
// subgroup, each holding HDS of its vec4s (attention_tiled.wgsl gives a thread a whole query, whose
// rows do not fit a GPU thread's registers at 128 dimensions). The workgroup's THREADS threads are RG
// groups of rows (RPT queries each) by CI columns of keys by DS slices of a head: per tile of BC keys
// (K, then V, through one tile of workgroup memory), a thread scores its RPT queries against every
// CI-th key on its slice, the DS slices' parts summed by subgroup shuffles, and keeps its own running
// max, sum and output slice over the keys of its column (online softmax). The CI columns' states are
// merged once at the end, through workgroup memory. Same ranges, soft-capping and sinks as
// attention_tiled.wgsl. The pipeline is made for its heads and rows: HD4 vec4s a head, BC keys a tile,
// BR queries a workgroup. Needs subgroups at least DS wide, step.wgsl, key_range.wgsl,
// key_union.wgsl, attention_params.wgsl, attention_chunk.wgsl and lanes_sum.wgsl.

const DS: u32 = 8u;           // threads a query's head is split over, neighbouring lanes of a subgroup
const CI: u32 = 4u;           // columns of keys
const RG: u32 = 4u;           // groups of rows
const THREADS: u32 = DS * CI * RG; // 128: the WG the pipeline is made with
const RPT: u32 = BR / RG;     // queries a thread scores
const HDS: u32 = HD4 / DS;    // vec4s of a head a thread holds
const CPT: u32 = BC / CI;     // keys of a tile a thread scores

var<workgroup> kv_tile: array<vec4<f32>, BC * HD4>; // a tile's keys, then its values; at the end, the merge
var<workgroup> merge_m: array<f32, THREADS>;
var<workgroup> merge_l: array<f32, THREADS>;

override WG: u32 = 128u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let t0 = wg.y * BR;
    if (t0 >= step.n_tokens) {
        return;
    }
    let kv = h / (P.n_head / P.n_kv_head);
    let d = lid % DS;
    let col = (lid / DS) % CI;
    let first_row = (lid / (DS * CI)) * RPT;
    key_union_open(lid);
    // Queries past the run attend as the run's last and store nothing.
    var range: array<vec2<u32>, RPT>;
    var q: array<array<vec4<f32>, HDS>, RPT>;
    var o: array<array<vec4<f32>, HDS>, RPT>;
    var m: array<f32, RPT>;
    var l: array<f32, RPT>;
    for (var r = 0u; r < RPT; r++) {
        let token = min(t0 + first_row + r, step.n_tokens - 1u);
        range[r] = key_range(token, P.causal != 0u, P.window, P.both_ways_from);
        key_union_add(range[r]);
        let q_row = (token * P.n_head + h) * HD4;
        for (var i = 0u; i < HDS; i++) {
            q[r][i] = Q[q_row + i * DS + d] * P.scale;
            o[r][i] = vec4<f32>(0.0);
        }
        m[r] = -3.0e38;
        l[r] = 0.0;
    }
    key_union_middle();
    for (var r = 0u; r < RPT; r++) {
        key_union_add_before(range[r]);
    }
    let keys = key_union_close(lid);
    for (var start = keys.x; start < keys.w; start = key_walk_next(keys, start, BC)) {
        let end = key_walk_end(keys, start);
        load_tile(false, start, end, kv, lid);
        // Each query's keys in this tile.
        var sees: array<vec2<u32>, RPT>;
        for (var r = 0u; r < RPT; r++) {
            sees[r] = key_walk_sees(keys, start, range[r]);
        }
        // The tile's scores: each thread's part of a query's dot product with a key, summed over the
        // DS threads of the query.
        var s: array<array<f32, CPT>, RPT>;
        for (var c = 0u; c < CPT; c++) {
            let k = slice((c * CI + col) * HD4 + d); // read once for the RPT queries
            for (var r = 0u; r < RPT; r++) {
                var part = vec4<f32>(0.0);
                for (var i = 0u; i < HDS; i++) {
                    part += q[r][i] * k[i];
                }
                var score = lanes_sum(part);
                if (P.softcap > 0.0) {
                    score = P.softcap * tanh(score / P.softcap);
                }
                let p = start + c * CI + col;
                s[r][c] = select(-3.0e38, score, p >= sees[r].x && p < sees[r].y);
            }
        }
        // This column's max, then one rescale of what it holds.
        for (var r = 0u; r < RPT; r++) {
            var tile_max = m[r];
            for (var c = 0u; c < CPT; c++) {
                tile_max = max(tile_max, s[r][c]);
            }
            let rescale = exp(m[r] - tile_max);
            l[r] *= rescale;
            for (var i = 0u; i < HDS; i++) {
                o[r][i] *= rescale;
            }
            m[r] = tile_max;
        }
        load_tile(true, start, end, kv, lid);
        for (var c = 0u; c < CPT; c++) {
            let v = slice((c * CI + col) * HD4 + d);
            let p = start + c * CI + col;
            for (var r = 0u; r < RPT; r++) {
                // Where no key was seen yet, m is s's -3e38 too: the range decides, not exp.
                let e = select(0.0, exp(s[r][c] - m[r]), p >= sees[r].x && p < sees[r].y);
                l[r] += e;
                for (var i = 0u; i < HDS; i++) {
                    o[r][i] += e * v[i];
                }
            }
        }
    }
    // The CI columns' states of each query, merged: thread (rows, col, d) is lid, so a query's slice
    // d of column k is at lid + (k - col) DS.
    let column0 = lid - col * DS;
    for (var r = 0u; r < RPT; r++) {
        workgroupBarrier(); // the last tile, or the query before, read
        merge_m[lid] = m[r];
        workgroupBarrier();
        var m_all = -3.0e38;
        for (var k = 0u; k < CI; k++) {
            m_all = max(m_all, merge_m[column0 + k * DS]);
        }
        let rescale = exp(m[r] - m_all);
        merge_l[lid] = l[r] * rescale;
        for (var i = 0u; i < HDS; i++) {
            kv_tile[lid * HDS + i] = o[r][i] * rescale;
        }
        workgroupBarrier();
        let t = t0 + first_row + r;
        if (col == 0u && t < step.n_tokens) {
            var sum = 0.0;
            var out: array<vec4<f32>, HDS>;
            for (var k = 0u; k < CI; k++) {
                let other = column0 + k * DS;
                sum += merge_l[other];
                for (var i = 0u; i < HDS; i++) {
                    out[i] += kv_tile[other * HDS + i];
                }
            }
            let sunk = with_sink(h, m_all, sum);
            let norm = select(0.0, sunk.x / sunk.y, sunk.y > 0.0);
            let at = (t * P.n_head + h) * HD4;
            for (var i = 0u; i < HDS; i++) {
                O[at + i * DS + d] = out[i] * norm;
            }
        }
    }
}

// A thread's slice of a key or value in the tile, from vec4 `at`: every DS-th vec4 of its head.
fn slice(at: u32) -> array<vec4<f32>, HDS> {
    var out: array<vec4<f32>, HDS>;
    for (var i = 0u; i < HDS; i++) {
        out[i] = kv_tile[at + i * DS];
    }
    return out;
}

// Loads the cache's rows [start, start + BC) of kv head `kv` into the tile, keys or values, zeros
// past `end`: every key of the tile is multiplied in (by a weight of 0 where unseen), and workgroup
// memory is not cleared between pipelines. Barriers before (the tile before it read) and after.
fn load_tile(values: bool, start: u32, end: u32, kv: u32, lid: u32) {
    workgroupBarrier();
    let count = min(BC, end - start);
    for (var i = lid; i < BC * HD4; i += THREADS) {
        var x = vec4<f32>(0.0);
        if (i < count * HD4) {
            let at = ((start + i / HD4) * P.n_kv_head + kv) * HD4 + i % HD4;
            if (values) {
                x = kv4(VC[at]);
            } else {
                x = kv4(KC[at]);
            }
        }
        kv_tile[i] = x;
    }
    workgroupBarrier();
}

// Attention of a run's queries in tiles (flash attention): a workgroup takes one head of WG
// consecutive tokens' queries, a query a thread, and walks the keys they see in tiles of BK keys and
// values held in workgroup memory. Each thread keeps its query, its running max and sum and its
// output row in registers (online softmax), so a key and a value read from memory serve WG queries,
// and a tile costs two barriers where attention.wgsl's blocks cost ten for four queries. It takes
// every range attention.wgsl takes (key_range.wgsl: causal, sliding windows, both ways, a sequence's
// own rows), soft-capped scores and sinks. q head h reads kv head h / (n_head / n_kv_head). The
// pipeline is made for its heads: HD4 vec4s a head, BK keys a tile (a tile of keys and one of values
// fill 16 KiB), so that every loop's bounds are constants, which compilers unroll and whose arrays
// they keep in registers. Needs step.wgsl, key_range.wgsl, key_walk.wgsl, key_union.wgsl,
// attention_params.wgsl and attention_chunk.wgsl.

override WG: u32 = 64u;

var<workgroup> k_tile: array<vec4<f32>, BK * HD4>;
var<workgroup> v_tile: array<vec4<f32>, BK * HD4>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let t0 = wg.y * WG;
    if (t0 >= step.n_tokens) {
        return;
    }
    let kv = h / (P.n_head / P.n_kv_head);
    let t = t0 + lid;
    // Threads past the run attend as the run's last query and store nothing.
    let token = min(t, step.n_tokens - 1u);
    let range = key_range(token, P.causal != 0u, P.window, P.both_ways_from);
    key_union_open(lid);
    key_union_add(range);
    key_union_middle();
    key_union_add_before(range);
    var q: array<vec4<f32>, HD4>;
    var acc: array<vec4<f32>, HD4>;
    let q_row = (token * P.n_head + h) * HD4;
    for (var i = 0u; i < HD4; i++) {
        q[i] = Q[q_row + i] * P.scale;
    }
    var m = -3.0e38;
    var l = 0.0;
    let keys = key_union_close(lid);
    for (var start = keys.x; start < keys.w; start = key_walk_next(keys, start, BK)) {
        let count = min(BK, key_walk_end(keys, start) - start);
        let sees = key_walk_sees(keys, start, range);
        // Past the last key, zeros: every key of the tile is multiplied in (by a weight of 0 where
        // unseen), and workgroup memory is not cleared between pipelines.
        for (var i = lid; i < BK * HD4; i += WG) {
            var k = vec4<f32>(0.0);
            var v = vec4<f32>(0.0);
            if (i < count * HD4) {
                let at = ((start + i / HD4) * P.n_kv_head + kv) * HD4 + i % HD4;
                k = kv4(KC[at]);
                v = kv4(VC[at]);
            }
            k_tile[i] = k;
            v_tile[i] = v;
        }
        workgroupBarrier();
        // The tile's scores, its max, then one rescale of what came before.
        var s: array<f32, BK>;
        var tile_max = -3.0e38;
        for (var j = 0u; j < BK; j++) {
            let p = start + j;
            var d = vec4<f32>(0.0);
            for (var i = 0u; i < HD4; i++) {
                d += q[i] * k_tile[j * HD4 + i];
            }
            var score = d.x + d.y + d.z + d.w;
            if (P.softcap > 0.0) {
                score = P.softcap * tanh(score / P.softcap);
            }
            let seen = p >= sees.x && p < sees.y;
            s[j] = select(-3.0e38, score, seen);
            tile_max = max(tile_max, s[j]);
        }
        let m_new = max(m, tile_max);
        let rescale = exp(m - m_new);
        l *= rescale;
        for (var i = 0u; i < HD4; i++) {
            acc[i] *= rescale;
        }
        for (var j = 0u; j < BK; j++) {
            let p = start + j;
            // Where no key was seen yet, m_new is s[j]'s -3e38 too: the range decides, not exp.
            let e = select(0.0, exp(s[j] - m_new), p >= sees.x && p < sees.y);
            l += e;
            for (var i = 0u; i < HD4; i++) {
                acc[i] += e * v_tile[j * HD4 + i];
            }
        }
        m = m_new;
        workgroupBarrier(); // the tile is read before the next one is loaded
    }
    let sunk = with_sink(h, m, l);
    if (t < step.n_tokens) {
        let out = (t * P.n_head + h) * HD4;
        let norm = select(0.0, sunk.x / sunk.y, sunk.y > 0.0);
        for (var i = 0u; i < HD4; i++) {
            O[out + i] = acc[i] * norm;
        }
    }
}

// What the attention kernels share: up to GROUP query heads that read the same keys, for each of TQ
// queries (consecutive tokens of a run), over ranges of cached keys, with a running max and sum
// (online softmax). Each head is a lane of a vec4, so a key and a value are read once for the group
// (grouped-query attention's heads of one kv head; every head of Multi-head Latent Attention) and for
// the TQ queries, which a prompt's chunk has side by side (flash attention's tile of queries; TQ is 1
// when decoding); the group's maxes and sums take the barriers of one. The keys go by in blocks of
// WG, one per thread; each thread keeps 4 output dims (t, t + WG, ...) of each query, so a value is at
// most 4 * WG floats, WG at most 128. The kernel declares KC, VC (which may be one buffer bound
// twice), P (with scale and softcap), WG, the constant TQ and `fn query(q: u32, g: u32, i: u32) ->
// vec4<f32>`: vec4 i of query q's head g; KC is an array<Kv4> and VC an array<Kv2> (kv_f32.wgsl or
// kv_f16.wgsl); and O, an array<f32>, where it stores a split (`store_split`). Needs head_group.wgsl
// (GROUP) and key_walk.wgsl. Call from uniform control flow.

// Where a query's keys and values lie in a cache row. Grouped-query attention: a row holds every kv
// head's key (KC) or value (VC), and key and value have the head's size. Multi-head Latent Attention:
// one cache row is the key (latent then rope part) and its first kv_lora floats the value.
struct Keys {
    row: u32,       // floats per cache row
    offset: u32,    // where this head's key and value start in a row
    key_len: u32,   // a multiple of 4
    value_len: u32, // at most 4 * WG
}

// The state after some keys for each query q, lane g for the group's head g: the max score m, the
// sum l of exp(score - m), and this thread's dims of the sum of exp(score - m) * v.
struct Attended {
    m: array<vec4<f32>, TQ>,
    l: array<vec4<f32>, TQ>,
    acc: array<array<vec4<f32>, 4>, TQ>,
}

// A block's exp(score - max), one per key, for each query; between blocks, a reduction's values, one
// per thread.
var<workgroup> block: array<array<vec4<f32>, TQ>, 128>;

fn group_max(t: u32, v: array<vec4<f32>, TQ>) -> array<vec4<f32>, TQ> {
    block[t] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            for (var q = 0u; q < TQ; q++) {
                block[t][q] = max(block[t][q], block[t + s][q]);
            }
        }
        workgroupBarrier();
    }
    let r = block[0];
    workgroupBarrier();
    return r;
}

fn group_sum(t: u32, v: array<vec4<f32>, TQ>) -> array<vec4<f32>, TQ> {
    block[t] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            for (var q = 0u; q < TQ; q++) {
                block[t][q] += block[t + s][q];
            }
        }
        workgroupBarrier();
    }
    let r = block[0];
    workgroupBarrier();
    return r;
}

// The walk over the ranges' keys (key_walk.wgsl): their union, less the gap between two sequences'
// rows where the queries are of two (a chunk's workgroup at the boundary of two prompts read
// together).
fn walk_of(ranges: array<vec2<u32>, TQ>) -> vec4<u32> {
    var first = ranges[0].x;
    var last_start = ranges[0].x;
    var end = ranges[0].y;
    for (var q = 1u; q < TQ; q++) {
        first = min(first, ranges[q].x);
        last_start = max(last_start, ranges[q].x);
        end = max(end, ranges[q].y);
    }
    var end_before = 0u;
    for (var q = 0u; q < TQ; q++) {
        if (ranges[q].x < last_start) {
            end_before = max(end_before, ranges[q].y);
        }
    }
    return key_walk(first, last_start, end_before, end);
}

// The group's `heads` heads of each query q < `live` over keys [ranges[q].x, ranges[q].y) of the
// cache (an empty range where x >= y), the blocks walking walk_of(ranges). Lanes past `heads` and
// queries from `live` on hold nothing meant (their dots and value sums are skipped); a query with
// no keys keeps l = 0. A block's max goes through group_max's tree; its sum does not: each thread
// keeps the sum of its own keys' weights (rescaled as the max moves, as every thread's is), and the
// threads' sums are added once, at the end: a block takes 10 barriers with 64 threads rather than
// 17, and barriers are most of a long cache's time on a CPU-backed adapter.
fn attend(keys: Keys, heads: u32, ranges: array<vec2<u32>, TQ>, live: u32, t: u32) -> Attended {
    let k4 = keys.key_len / 4u;
    let walk = walk_of(ranges);
    var r: Attended;
    var l: array<vec4<f32>, TQ>; // this thread's keys' part of r.l
    for (var q = 0u; q < TQ; q++) {
        r.m[q] = vec4<f32>(-3.0e38);
    }
    for (var start = walk.x; start < walk.w; start = key_walk_next(walk, start, WG)) {
        let end = key_walk_end(walk, start);
        let p = start + t;
        var s: array<vec4<f32>, TQ>;
        var seen: array<bool, TQ>; // query q sees key p
        for (var q = 0u; q < TQ; q++) {
            s[q] = vec4<f32>(-3.0e38);
            let range = key_walk_sees(walk, start, ranges[q]);
            seen[q] = range.x <= p && p < range.y;
        }
        if (p < end) {
            let k = (p * keys.row + keys.offset) / 4u;
            var d: array<vec4<f32>, TQ>;
            for (var i = 0u; i < k4; i++) {
                let key = kv4(KC[k + i]);
                for (var q = 0u; q < TQ; q++) {
                    if (q >= live) {
                        continue; // a constant count of turns: the arrays stay in registers
                    }
                    for (var g = 0u; g < heads; g++) {
                        d[q][g] += dot(query(q, g, i), key);
                    }
                }
            }
            for (var q = 0u; q < TQ; q++) {
                var score = d[q] * P.scale;
                if (P.softcap > 0.0) {
                    // tanh of a clamped argument: some backends compute tanh by exp, which overflows.
                    score = P.softcap * tanh(clamp(score / P.softcap, vec4<f32>(-20.0), vec4<f32>(20.0)));
                }
                s[q] = select(vec4<f32>(-3.0e38), score, seen[q]);
            }
        }
        let block_max = group_max(t, s);
        var e: array<vec4<f32>, TQ>;
        var rescale: array<vec4<f32>, TQ>;
        for (var q = 0u; q < TQ; q++) {
            let m_new = max(r.m[q], block_max[q]);
            e[q] = select(vec4<f32>(0.0), exp(s[q] - m_new), seen[q]);
            // Rescale what came before to the new max (nothing came before a query's first key:
            // its max was -3e38 and its sums 0).
            rescale[q] = exp(r.m[q] - m_new);
            l[q] = l[q] * rescale[q] + e[q];
            r.m[q] = m_new;
        }
        block[t] = e;
        workgroupBarrier(); // publishes block[]
        let count = min(WG, end - start);
        for (var i = 0u; i < 4u; i++) {
            let dim = t + i * WG;
            if (dim < keys.value_len) {
                var a: array<vec4<f32>, TQ>;
                for (var q = 0u; q < TQ; q++) {
                    a[q] = r.acc[q][i] * rescale[q];
                }
                let v = start * keys.row + keys.offset + dim;
                for (var j = 0u; j < count; j++) {
                    let at = v + j * keys.row;
                    let value = kv2(VC[at / 2u])[at & 1u];
                    let w = block[j];
                    for (var q = 0u; q < TQ; q++) {
                        if (q < live) {
                            a[q] += w[q] * value;
                        }
                    }
                }
                for (var q = 0u; q < TQ; q++) {
                    r.acc[q][i] = a[q];
                }
            }
        }
        workgroupBarrier(); // the next block overwrites block[]
    }
    r.l = group_sum(t, l);
    return r;
}

// A split's state of query q for the group's heads `heads` (the first's row of the run's heads,
// token * n_head + head, and how many), split `split` of `n_split` (flash-decoding;
// attention_merge.wgsl combines them): each head's part (token, head, split) of O, (value_len + 2)
// floats, holds this thread's dims of the unnormalized sum, then the max and the weight (0 for a
// split with no keys).
fn store_split(
    r: Attended,
    q: u32,
    heads: vec2<u32>,
    split: u32,
    n_split: u32,
    value_len: u32,
    t: u32,
) {
    for (var g = 0u; g < heads.y; g++) {
        let out = ((heads.x + g) * n_split + split) * (value_len + 2u);
        for (var i = 0u; i < 4u; i++) {
            let dim = t + i * WG;
            if (dim < value_len) {
                O[out + dim] = r.acc[q][i][g];
            }
        }
        if (t == 0u) {
            O[out + value_len] = r.m[q][g];
            O[out + value_len + 1u] = r.l[q][g];
        }
    }
}

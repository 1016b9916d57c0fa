// What the attention kernels share: one query head over a range of cached keys, with a running max
// and sum (online softmax). The keys go by in blocks of WG, one per thread; each thread keeps 4 output
// dims (t, t + WG, ...), so a value is at most 4 * WG floats. The kernel declares Q, KC, VC (which may
// be one buffer bound twice), P (with scale and softcap) and WG; needs reduce.wgsl. Call from uniform
// control flow.

// Where a query's keys and values lie in a cache row. Grouped-query attention: a row holds every kv
// head's key (KC) or value (VC), and key and value have the head's size. Multi-head Latent Attention:
// one cache row is the key (latent then rope part) and its first kv_lora floats the value.
struct Keys {
    row: u32,       // floats per cache row
    offset: u32,    // where this head's key and value start in a row
    key_len: u32,   // a multiple of 4
    value_len: u32, // at most 4 * WG
}

// The state after some keys: the max score m, the sum l of exp(score - m), and this thread's dims of
// the sum of exp(score - m) * v.
struct Attended {
    m: f32,
    l: f32,
    acc: array<f32, 4>,
}

// The first key a query at position end - 1 sees: the last `window` keys, or all where window is 0.
fn first_key(end: u32, window: u32) -> u32 {
    return select(0u, end - min(end, window), window > 0u);
}

var<workgroup> weights: array<f32, 256>; // a block's exp(score - max), one per key

// The query at vec4 `q` of Q over keys [first, end) of the cache.
fn attend(q: u32, keys: Keys, first: u32, end: u32, t: u32) -> Attended {
    let k4 = keys.key_len / 4u;
    var r: Attended;
    r.m = -3.0e38;
    for (var start = first; start < end; start += WG) {
        let p = start + t;
        var s = -3.0e38;
        if (p < end) {
            let k = (p * keys.row + keys.offset) / 4u;
            var d = 0.0;
            for (var i = 0u; i < k4; i++) {
                d += dot(Q[q + i], KC[k + i]);
            }
            s = d * P.scale;
            if (P.softcap > 0.0) {
                // tanh of a clamped argument: some backends compute tanh by exp, which overflows.
                s = P.softcap * tanh(clamp(s / P.softcap, -20.0, 20.0));
            }
        }
        let m_new = max(r.m, reduce_max(t, s));
        let e = select(0.0, exp(s - m_new), p < end);
        weights[t] = e;
        // Rescale what came before to the new max (nothing came before the first block).
        let rescale = select(exp(r.m - m_new), 0.0, start == first);
        r.l = r.l * rescale + reduce_sum(t, e); // its barriers also publish weights[]
        let count = min(WG, end - start);
        for (var i = 0u; i < 4u; i++) {
            let dim = t + i * WG;
            if (dim < keys.value_len) {
                var a = r.acc[i] * rescale;
                let v = start * keys.row + keys.offset + dim;
                for (var j = 0u; j < count; j++) {
                    a += weights[j] * VC[v + j * keys.row];
                }
                r.acc[i] = a;
            }
        }
        r.m = m_new;
        workgroupBarrier(); // the next block overwrites weights[]
    }
    return r;
}

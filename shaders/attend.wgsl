// What the attention kernels share: up to GROUP query heads that read the same keys, over a range of
// cached keys, with a running max and sum (online softmax). Each head is a lane of a vec4, so a key
// and a value are read once for the group (grouped-query attention's heads of one kv head; every
// head of Multi-head Latent Attention) and the group's maxes and sums take the barriers of one. The
// keys go by in blocks of WG, one per thread; each thread keeps 4 output dims (t, t + WG, ...), so a
// value is at most 4 * WG floats, WG at most 128. The kernel declares KC, VC (which may be one buffer
// bound twice), P (with scale and softcap), WG and `fn query(g: u32, i: u32) -> vec4<f32>`: vec4 i of
// the group's head g. Call from uniform control flow.

const GROUP: u32 = 4u;

// Where a query's keys and values lie in a cache row. Grouped-query attention: a row holds every kv
// head's key (KC) or value (VC), and key and value have the head's size. Multi-head Latent Attention:
// one cache row is the key (latent then rope part) and its first kv_lora floats the value.
struct Keys {
    row: u32,       // floats per cache row
    offset: u32,    // where this head's key and value start in a row
    key_len: u32,   // a multiple of 4
    value_len: u32, // at most 4 * WG
}

// The state after some keys, lane g for the group's head g: the max score m, the sum l of
// exp(score - m), and this thread's dims of the sum of exp(score - m) * v.
struct Attended {
    m: vec4<f32>,
    l: vec4<f32>,
    acc: array<vec4<f32>, 4>,
}

// The first key a query at position end - 1 sees: the last `window` keys, or all where window is 0.
fn first_key(end: u32, window: u32) -> u32 {
    return select(0u, end - min(end, window), window > 0u);
}

// The group's heads of `n_group` heads in all (one kv head's query heads, or every head where they
// share one), for workgroup `i` of the groups: the first head and how many.
fn head_group(i: u32, n_group: u32) -> vec2<u32> {
    let per = (n_group + GROUP - 1u) / GROUP;
    let first = (i / per) * n_group + (i % per) * GROUP;
    return vec2<u32>(first, min(GROUP, n_group - (i % per) * GROUP));
}

var<workgroup> weights: array<vec4<f32>, 128>; // a block's exp(score - max), one per key
var<workgroup> lanes: array<vec4<f32>, 128>;   // a reduction's values, one per thread

fn group_max(t: u32, v: vec4<f32>) -> vec4<f32> {
    lanes[t] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            lanes[t] = max(lanes[t], lanes[t + s]);
        }
        workgroupBarrier();
    }
    let r = lanes[0];
    workgroupBarrier();
    return r;
}

fn group_sum(t: u32, v: vec4<f32>) -> vec4<f32> {
    lanes[t] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            lanes[t] += lanes[t + s];
        }
        workgroupBarrier();
    }
    let r = lanes[0];
    workgroupBarrier();
    return r;
}

// The group's `heads` queries over keys [first, end) of the cache. Lanes past `heads` hold nothing
// meant. A block's max goes through group_max's tree; its sum does not: each thread keeps the sum of
// its own keys' weights (rescaled as the max moves, as every thread's is), and the threads' sums are
// added once, at the end: a block takes 10 barriers with 64 threads rather than 17, and barriers are
// most of a long cache's time on a CPU-backed adapter.
fn attend(keys: Keys, heads: u32, first: u32, end: u32, t: u32) -> Attended {
    let k4 = keys.key_len / 4u;
    var r: Attended;
    r.m = vec4<f32>(-3.0e38);
    var l = vec4<f32>(0.0); // this thread's keys' part of r.l
    for (var start = first; start < end; start += WG) {
        let p = start + t;
        var s = vec4<f32>(-3.0e38);
        if (p < end) {
            let k = (p * keys.row + keys.offset) / 4u;
            var d = vec4<f32>(0.0);
            for (var i = 0u; i < k4; i++) {
                let key = KC[k + i];
                for (var g = 0u; g < heads; g++) {
                    d[g] += dot(query(g, i), key);
                }
            }
            s = d * P.scale;
            if (P.softcap > 0.0) {
                // tanh of a clamped argument: some backends compute tanh by exp, which overflows.
                s = P.softcap * tanh(clamp(s / P.softcap, vec4<f32>(-20.0), vec4<f32>(20.0)));
            }
        }
        let m_new = max(r.m, group_max(t, s));
        let e = select(vec4<f32>(0.0), exp(s - m_new), p < end);
        weights[t] = e;
        workgroupBarrier(); // publishes weights[]
        // Rescale what came before to the new max (nothing came before the first block).
        let rescale = select(exp(r.m - m_new), vec4<f32>(0.0), start == first);
        l = l * rescale + e;
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
    r.l = group_sum(t, l);
    return r;
}

// One level of the sampler's top-k: the k largest values of each slice of the input, largest first
// (the first id of equals first), as (value, id) pairs, in K_MAX slots per slice. The first level reads
// the logits (a value's id is its position), later levels the pairs the level before wrote, until one
// slice is left. Non-finite values are never candidates, nor, where the row's flag in `allowed` is
// set, the ids a grammar does not allow; slots past the last candidate hold id NONE. Needs pick.wgsl.
//
// A workgroup holds its slice in registers, E values per thread. Each round the threads offer their
// best remaining value, a tree in workgroup memory finds the largest, and its thread takes it out.

struct Candidate {
    value: f32,
    id: u32,
}

struct Params {
    n: u32,           // inputs
    from_logits: u32, // 1: read `logits`, else `candidates`
    row: u32,         // where the row of logits starts in `logits`
    allowed_at: u32,  // where the row's flag and bits start in `allowed`
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> candidates: array<Candidate>;
@group(0) @binding(2) var<storage, read> pick: Pick;
@group(0) @binding(3) var<storage, read_write> out: array<Candidate>; // (slices, K_MAX)
@group(0) @binding(4) var<storage, read> allowed: array<u32>;
@group(0) @binding(5) var<uniform> P: Params;

const NONE: u32 = 0xffffffffu;
const K_MAX: u32 = 64u;
const E: u32 = 16u;
override WG: u32 = 128u; // a slice: WG * E inputs

var<workgroup> best_value: array<f32, 128>;
var<workgroup> best_id: array<u32, 128>;

// Whether (v, i) goes before (w, j): a candidate before none, then larger, then the smaller id.
fn before(v: f32, i: u32, w: f32, j: u32) -> bool {
    if (i == NONE) {
        return false;
    }
    return j == NONE || v > w || (v == w && i < j);
}

fn finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    var value: array<f32, E>;
    var id: array<u32, E>;
    let base = wg.x * WG * E;
    let masked = P.from_logits == 1u && allowed[P.allowed_at] != 0u;
    for (var e = 0u; e < E; e++) {
        let j = base + e * WG + t;
        value[e] = 0.0;
        id[e] = NONE;
        if (j < P.n) {
            var c = Candidate(0.0, j);
            if (P.from_logits == 1u) {
                c.value = logits[P.row + j];
            } else {
                c = candidates[j];
            }
            let ok = !masked || ((allowed[P.allowed_at + 1u + j / 32u] >> (j % 32u)) & 1u) == 1u;
            if (c.id != NONE && finite(c.value) && ok) {
                value[e] = c.value;
                id[e] = c.id;
            }
        }
    }
    // This thread's best remaining value: `mine` indexes it.
    var mine = 0u;
    for (var e = 1u; e < E; e++) {
        if (before(value[e], id[e], value[mine], id[mine])) {
            mine = e;
        }
    }
    let k = min(pick.k, K_MAX);
    for (var r = 0u; r < k; r++) {
        best_value[t] = value[mine];
        best_id[t] = id[mine];
        workgroupBarrier();
        for (var s = WG / 2u; s > 0u; s >>= 1u) {
            if (t < s && before(best_value[t + s], best_id[t + s], best_value[t], best_id[t])) {
                best_value[t] = best_value[t + s];
                best_id[t] = best_id[t + s];
            }
            workgroupBarrier();
        }
        let won = best_id[0];
        if (t == 0u) {
            out[wg.x * K_MAX + r] = Candidate(best_value[0], won);
        }
        workgroupBarrier(); // all have read the winner before the next round writes
        if (won != NONE && id[mine] == won) {
            id[mine] = NONE;
            for (var e = 0u; e < E; e++) {
                if (before(value[e], id[e], value[mine], id[mine])) {
                    mine = e;
                }
            }
        }
    }
    for (var r = k + t; r < K_MAX; r += WG) {
        out[wg.x * K_MAX + r] = Candidate(0.0, NONE);
    }
}

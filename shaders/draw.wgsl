// A token drawn from a row of logits (after the penalties) at a temperature, among the fewest
// largest whose probabilities reach top-p, those within min-p of the largest and, where the row's flag
// in `allowed` is set, those a grammar allows: the
// Gumbel-max draw, argmax of logit / temperature + G with G = -ln(-ln(u)) and u uniform, which picks
// token i with probability softmax(logits / temperature)[i] over the kept ones. Each token's u comes
// from a hash of its id and the step's key (the sampler's seeded generator gives a key a step), so a
// seed repeats its draws. One workgroup; out[0] is the token (0 where none is kept). Needs
// reduce.wgsl.

struct Params {
    n: u32,          // logits in the row
    row: u32,        // where the row starts in `logits`
    allowed_at: u32, // where the row's flag and bits start in `allowed`
}

struct Draw {
    temperature: f32,
    min_p: f32,      // 0: no floor
    key: u32,
    top_p: f32,      // 1: every token
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> allowed: array<u32>;
@group(0) @binding(2) var<storage, read> draw: Draw;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 256u; // the workgroup arrays hold 256
const NONE: u32 = 0xffffffffu;

var<workgroup> best_value: array<f32, 256>;
var<workgroup> best_id: array<u32, 256>;
// Each thread's masses at the top-p search's eight thresholds, two vec4s a thread.
var<workgroup> sums_at: array<vec4<f32>, 512>;

// Passes of the top-p search: its interval of 65 logits narrows to 65 / 8^10, under 1e-7.
const PASSES: u32 = 10u;

fn finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

fn kept(j: u32, x: f32) -> bool {
    let masked = allowed[P.allowed_at] != 0u;
    let ok = !masked || ((allowed[P.allowed_at + 1u + j / 32u] >> (j % 32u)) & 1u) == 1u;
    return ok && finite(x);
}

// A 32-bit hash (PCG's output permutation of one LCG step).
fn hash(x: u32) -> u32 {
    let s = x * 747796405u + 2891336453u;
    let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (w >> 22u) ^ w;
}

// Whether (v, i) goes before (w, j): a token before none, then larger, then the smaller id.
fn before(v: f32, i: u32, w: f32, j: u32) -> bool {
    if (i == NONE) {
        return false;
    }
    return j == NONE || v > w || (v == w && i < j);
}

// The workgroup's best (value, id) of each thread's; every thread gets it.
fn best(t: u32, v: f32, i: u32) -> vec2<u32> {
    best_value[t] = v;
    best_id[t] = i;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s && before(best_value[t + s], best_id[t + s], best_value[t], best_id[t])) {
            best_value[t] = best_value[t + s];
            best_id[t] = best_id[t + s];
        }
        workgroupBarrier();
    }
    let winner = vec2<u32>(bitcast<u32>(best_value[0]), best_id[0]);
    workgroupBarrier(); // all have read it before the arrays are written again
    return winner;
}

// The kept tokens' probability (at temperature 1, unnormalized: over e^top) at or above each of
// the eight logits lo + step, lo + 2 step, ..., lo + 8 step, in one pass over the row; every
// thread gets them, the first four in [0], the others in [1].
fn masses(t: u32, lo: f32, step: f32, top: f32) -> array<vec4<f32>, 2> {
    let at0 = lo + step * vec4<f32>(1.0, 2.0, 3.0, 4.0);
    let at1 = lo + step * vec4<f32>(5.0, 6.0, 7.0, 8.0);
    var m0 = vec4<f32>(0.0);
    var m1 = vec4<f32>(0.0);
    for (var j = t; j < P.n; j += WG) {
        let x = logits[P.row + j];
        if (kept(j, x) && x >= at0.x) {
            let e = vec4<f32>(exp(x - top));
            m0 += select(vec4<f32>(0.0), e, vec4<f32>(x) >= at0);
            m1 += select(vec4<f32>(0.0), e, vec4<f32>(x) >= at1);
        }
    }
    sums_at[2u * t] = m0;
    sums_at[2u * t + 1u] = m1;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            sums_at[2u * t] += sums_at[2u * (t + s)];
            sums_at[2u * t + 1u] += sums_at[2u * (t + s) + 1u];
        }
        workgroupBarrier();
    }
    let m = array<vec4<f32>, 2>(sums_at[0], sums_at[1]);
    workgroupBarrier(); // all have read them before the array is written again
    return m;
}

// The kept tokens' probability, unnormalized as `masses`.
fn mass_all(t: u32, top: f32) -> f32 {
    var m = 0.0;
    for (var j = t; j < P.n; j += WG) {
        let x = logits[P.row + j];
        if (kept(j, x)) {
            m += exp(x - top);
        }
    }
    return reduce_sum(t, m);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) t: u32) {
    // The largest kept logit, for min-p's floor.
    var v = 0.0;
    var i = NONE;
    for (var j = t; j < P.n; j += WG) {
        let x = logits[P.row + j];
        if (kept(j, x) && before(x, j, v, i)) {
            v = x;
            i = j;
        }
    }
    let largest = best(t, v, i);
    let top = bitcast<f32>(largest.x);
    var lowest = -3.4e38;
    // Top-p: the largest logit `lo` whose tokens at or above reach top_p of the probability, by
    // narrowing [top - 64, top + 1] (what lies below top - 64 is under e^-64 of the largest) to an
    // eighth a pass: the mass at the eight thresholds that cut it in eighths in one pass over the
    // row, the interval then the eighth from the last threshold that still reaches top_p.
    if (draw.top_p < 1.0) {
        let wanted = draw.top_p * mass_all(t, top);
        var lo = top - 64.0;
        var width = 65.0;
        for (var p = 0u; p < PASSES; p++) {
            let step = width / 8.0;
            let m = masses(t, lo, step, top);
            // The masses fall with the threshold: those that reach top_p come first.
            let one = vec4<f32>(1.0);
            let reached = dot(select(vec4<f32>(0.0), one, m[0] >= vec4<f32>(wanted)), one)
                + dot(select(vec4<f32>(0.0), one, m[1] >= vec4<f32>(wanted)), one);
            lo += reached * step;
            width = step;
        }
        lowest = lo;
    }
    // Min-p: exp(l - top) >= min_p  <=>  l >= top + ln(min_p). (With none kept, none is drawn.)
    if (draw.min_p > 0.0) {
        lowest = max(lowest, top + log(draw.min_p));
    }
    let key = hash(draw.key);
    v = 0.0;
    i = NONE;
    for (var j = t; j < P.n; j += WG) {
        let x = logits[P.row + j];
        if (kept(j, x) && x >= lowest) {
            // u in (0, 1): 24 bits and a half.
            let u = (f32(hash(j ^ key) >> 8u) + 0.5) / 16777216.0;
            let g = x / draw.temperature - log(-log(u));
            if (before(g, j, v, i)) {
                v = g;
                i = j;
            }
        }
    }
    let drawn = best(t, v, i);
    if (t == 0u) {
        out[0] = select(drawn.y, 0u, drawn.y == NONE);
    }
}

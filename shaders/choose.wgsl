// The sampler's choice among its top-k candidates (largest first, as top_k.wgsl leaves them), made as
// the CPU sampler makes it (Sampler::choose): top-p over their softmax, min-p against the largest,
// the softmax at the temperature, and the first candidate whose running sum passes the draw `r` (a
// number in [0, 1) from the sampler's seeded generator); the first candidate at temperature 0. Writes
// the token's id after the log-sum-exp, so a sampled step reads back 4 bytes. One thread.

struct Choose {
    temperature: f32,
    top_p: f32,
    min_p: f32,
    r: f32,
    k: u32,
}

struct Params {
    chosen_at: u32, // where the id goes in `result`, in u32s
}

@group(0) @binding(0) var<storage, read_write> result: array<u32>; // (value, id) pairs, ..., the id
@group(0) @binding(1) var<storage, read> choose: Choose;
@group(0) @binding(2) var<uniform> P: Params;

const NONE: u32 = 0xffffffffu;
const K_MAX: u32 = 64u;

fn value(i: u32) -> f32 {
    return bitcast<f32>(result[2u * i]);
}

fn id(i: u32) -> u32 {
    return result[2u * i + 1u];
}

override WG: u32 = 1u;

@compute @workgroup_size(WG)
fn main() {
    // The candidates there are (slots past the last hold NONE).
    var n = 0u;
    for (var i = 0u; i < min(choose.k, K_MAX); i++) {
        if (id(i) != NONE) {
            n = i + 1u;
        }
    }
    if (n == 0u) {
        result[P.chosen_at] = 0u;
        return;
    }
    if (choose.temperature <= 0.0) {
        result[P.chosen_at] = id(0u);
        return;
    }
    let top = value(0u);
    // Top-p: the fewest candidates whose probabilities (at temperature 1) reach top_p.
    if (choose.top_p < 1.0) {
        var total = 0.0;
        for (var i = 0u; i < n; i++) {
            total += exp(value(i) - top);
        }
        var cum = 0.0;
        for (var i = 0u; i < n; i++) {
            cum += exp(value(i) - top) / total;
            if (cum >= choose.top_p) {
                n = i + 1u;
                break;
            }
        }
    }
    // Min-p: those within min_p of the largest's probability.
    var lowest = -3.4e38;
    if (choose.min_p > 0.0) {
        lowest = top + log(choose.min_p);
    }
    var total = 0.0;
    for (var i = 0u; i < n; i++) {
        if (value(i) >= lowest) {
            total += exp((value(i) - top) / choose.temperature);
        }
    }
    var cum = 0.0;
    var last = id(0u);
    for (var i = 0u; i < n; i++) {
        if (value(i) >= lowest) {
            cum += exp((value(i) - top) / choose.temperature) / total;
            last = id(i);
            if (choose.r < cum) {
                result[P.chosen_at] = last;
                return;
            }
        }
    }
    result[P.chosen_at] = last;
}

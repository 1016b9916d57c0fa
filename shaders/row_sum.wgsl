// The sums of a row's (or a pair of rows') parts over the TPR threads of the row thread t works on,
// in every one of them, through workgroup memory. Call from uniform control flow.

var<workgroup> partial: array<vec2<f32>, 256>;

fn pair_sum(t: u32, v: vec2<f32>) -> vec2<f32> {
    let lane = t % TPR;
    partial[t] = v;
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            partial[t] += partial[t + s];
        }
        workgroupBarrier();
    }
    return partial[t - lane];
}

// pair_sum for four tokens' sums of a pair (pair_dot4's two vec4s), in one reduction: one per
// token, each with its barriers, is slower on a CPU-backed adapter.
var<workgroup> partial4: array<array<vec4<f32>, 2>, 256>;

fn pair_sum4(t: u32, v: array<vec4<f32>, 2>) -> array<vec4<f32>, 2> {
    let lane = t % TPR;
    partial4[t] = v;
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            partial4[t][0] += partial4[t + s][0];
            partial4[t][1] += partial4[t + s][1];
        }
        workgroupBarrier();
    }
    return partial4[t - lane];
}

fn row_sum(t: u32, v: f32) -> f32 {
    return pair_sum(t, vec2<f32>(v, 0.0)).x;
}

// pair_sum for two pairs' sums (quad_dot's), in the first half of pair_sum4's workgroup memory.
fn quad_sum(t: u32, v: vec4<f32>) -> vec4<f32> {
    let lane = t % TPR;
    partial4[t][0] = v;
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            partial4[t][0] += partial4[t + s][0];
        }
        workgroupBarrier();
    }
    return partial4[t - lane][0];
}

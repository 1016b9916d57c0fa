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

fn row_sum(t: u32, v: f32) -> f32 {
    return pair_sum(t, vec2<f32>(v, 0.0)).x;
}

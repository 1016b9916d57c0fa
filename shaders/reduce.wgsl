// Workgroup-wide max and sum of one value per thread, for kernels whose WG threads share one result.
// Call from uniform control flow; the kernel declares WG (at most 256).

var<workgroup> shared_values: array<f32, 256>;

fn reduce_max(t: u32, v: f32) -> f32 {
    shared_values[t] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            shared_values[t] = max(shared_values[t], shared_values[t + s]);
        }
        workgroupBarrier();
    }
    let r = shared_values[0];
    workgroupBarrier();
    return r;
}

fn reduce_sum(t: u32, v: f32) -> f32 {
    shared_values[t] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            shared_values[t] += shared_values[t + s];
        }
        workgroupBarrier();
    }
    let r = shared_values[0];
    workgroupBarrier();
    return r;
}

// The sums of a row's (or a pair of rows') parts over the TPR threads of the row thread t works on,
// in every one of them, by subgroup shuffles: no workgroup memory and no barrier. For adapters whose
// subgroups are at least TPR wide, where a row's TPR consecutive threads are neighbouring lanes of one
// subgroup, as 1-D workgroups lay them out. Call from uniform control flow.

fn pair_sum(t: u32, v: vec2<f32>) -> vec2<f32> {
    var sum = v;
    for (var mask = TPR / 2u; mask > 0u; mask >>= 1u) {
        sum += subgroupShuffleXor(sum, mask);
    }
    return sum;
}

// pair_sum for four tokens' sums of a pair (pair_dot4's two vec4s).
fn pair_sum4(t: u32, v: array<vec4<f32>, 2>) -> array<vec4<f32>, 2> {
    var a = v[0];
    var b = v[1];
    for (var mask = TPR / 2u; mask > 0u; mask >>= 1u) {
        a += subgroupShuffleXor(a, mask);
        b += subgroupShuffleXor(b, mask);
    }
    return array<vec4<f32>, 2>(a, b);
}

// pair_sum for two pairs' sums (quad_dot's).
fn quad_sum(t: u32, v: vec4<f32>) -> vec4<f32> {
    var sum = v;
    for (var mask = TPR / 2u; mask > 0u; mask >>= 1u) {
        sum += subgroupShuffleXor(sum, mask);
    }
    return sum;
}

fn row_sum(t: u32, v: f32) -> f32 {
    var sum = v;
    for (var mask = TPR / 2u; mask > 0u; mask >>= 1u) {
        sum += subgroupShuffleXor(sum, mask);
    }
    return sum;
}

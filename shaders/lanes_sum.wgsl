// A query's score against a key, its dims split over DS neighbouring lanes of a subgroup: each lane's
// part of the dot product summed by subgroup shuffles, the sum in every lane (attention_rows.wgsl,
// attention_split_lanes.wgsl). The kernel defines DS, a power of two no wider than its subgroups.

fn lanes_sum(part: vec4<f32>) -> f32 {
    var sum = part.x + part.y + part.z + part.w;
    for (var lanes = DS / 2u; lanes > 0u; lanes >>= 1u) {
        sum += subgroupShuffleXor(sum, lanes);
    }
    return sum;
}

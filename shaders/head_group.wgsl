// Query heads that read the same keys, taken GROUP to a workgroup: grouped-query attention's heads of
// one kv head, or every head of Multi-head Latent Attention. A key read once serves the group.

const GROUP: u32 = 4u;

// The group's heads of `n_group` heads in all (one kv head's query heads, or every head where they
// share one), for workgroup `i` of the groups: the first head and how many.
fn head_group(i: u32, n_group: u32) -> vec2<u32> {
    let per = (n_group + GROUP - 1u) / GROUP;
    let first = (i / per) * n_group + (i % per) * GROUP;
    return vec2<u32>(first, min(GROUP, n_group - (i % per) * GROUP));
}

// The keys a workgroup's queries see together, [first, end): the union of their key_range()s, which
// the chunk kernels (attention_tiled.wgsl, attention_rows.wgsl) walk in tiles. Every thread calls
// key_union_open, then key_union_add with each of its queries' ranges, then key_union_close, all in
// uniform control flow. Needs key_range.wgsl.

var<workgroup> union_bounds: array<atomic<u32>, 2>;
var<workgroup> union_seen: vec2<u32>;

fn key_union_open(lid: u32) {
    if (lid == 0u) {
        atomicStore(&union_bounds[0], 0xffffffffu);
        atomicStore(&union_bounds[1], 0u);
    }
    workgroupBarrier();
}

fn key_union_add(range: vec2<u32>) {
    atomicMin(&union_bounds[0], range.x);
    atomicMax(&union_bounds[1], range.y);
}

// The union, the same in every thread, once all have added theirs.
fn key_union_close(lid: u32) -> vec2<u32> {
    workgroupBarrier();
    if (lid == 0u) {
        union_seen = vec2<u32>(atomicLoad(&union_bounds[0]), atomicLoad(&union_bounds[1]));
    }
    return workgroupUniformLoad(&union_seen);
}

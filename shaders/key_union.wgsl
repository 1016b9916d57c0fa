// The walk over the keys (key_walk.wgsl) for a workgroup whose threads each hold some of its
// queries: the chunk kernels' (attention_tiled.wgsl, attention_rows.wgsl, attention_coop.wgsl,
// mla_attention_coop.wgsl), which walk it in tiles. Every thread calls key_union_open,
// key_union_add with each of its queries' ranges, key_union_middle, then key_union_add_before with
// each again, then key_union_close, all in uniform control flow. Needs key_range.wgsl and
// key_walk.wgsl.

// The union's first key, the last start of a range, the end of those that start before it, the
// union's end.
var<workgroup> union_bounds: array<atomic<u32>, 4>;
var<workgroup> union_seen: vec4<u32>;

fn key_union_open(lid: u32) {
    if (lid == 0u) {
        atomicStore(&union_bounds[0], 0xffffffffu);
        atomicStore(&union_bounds[1], 0u);
        atomicStore(&union_bounds[2], 0u);
        atomicStore(&union_bounds[3], 0u);
    }
    workgroupBarrier();
}

fn key_union_add(range: vec2<u32>) {
    atomicMin(&union_bounds[0], range.x);
    atomicMax(&union_bounds[1], range.x);
    atomicMax(&union_bounds[3], range.y);
}

// Once every thread has added its ranges: the last start is known.
fn key_union_middle() {
    workgroupBarrier();
}

fn key_union_add_before(range: vec2<u32>) {
    if (range.x < atomicLoad(&union_bounds[1])) {
        atomicMax(&union_bounds[2], range.y);
    }
}

// The walk, the same in every thread, once all have added theirs again.
fn key_union_close(lid: u32) -> vec4<u32> {
    workgroupBarrier();
    if (lid == 0u) {
        let first = atomicLoad(&union_bounds[0]);
        let last_start = atomicLoad(&union_bounds[1]);
        let end_before = atomicLoad(&union_bounds[2]);
        let end = atomicLoad(&union_bounds[3]);
        union_seen = key_walk(first, last_start, end_before, end);
    }
    return workgroupUniformLoad(&union_seen);
}

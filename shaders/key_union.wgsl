// The keys a workgroup's queries see together, which the chunk kernels (attention_tiled.wgsl,
// attention_rows.wgsl, attention_coop.wgsl, mla_attention_coop.wgsl) walk in tiles: the union of
// their key_range()s, less the gap between two sequences' rows where the workgroup's queries are of
// two (a server's prompts read in one chunk: each sequence's rows lie in its own part of the cache,
// and walking from the first's to the second's would read every row between, a whole context's
// worth). The walk is [x, y) then [z, w): z is the last start of a query's range, y the end of the
// ranges that start before it; one interval (y = z = w) where those meet. Every thread calls
// key_union_open, key_union_add with each of its queries' ranges, key_union_middle, then
// key_union_add_before with each again, then key_union_close, all in uniform control flow, and walks
// with key_walk_end and key_walk_next. A tile from the first interval may reach into the second's
// keys, which it does not hold: each query's range within a tile is key_walk_sees's. Needs
// key_range.wgsl.

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
        let gap = end_before > first && end_before < last_start;
        union_seen = select(vec4<u32>(first, end, end, end), vec4<u32>(first, end_before, last_start, end), gap);
    }
    return workgroupUniformLoad(&union_seen);
}

// Where the walk's interval that holds `start` ends: a tile from `start` reads no key past it.
fn key_walk_end(keys: vec4<u32>, start: u32) -> u32 {
    return select(keys.w, keys.y, start < keys.y);
}

// Where the walk's tile after the one of `size` keys from `start` starts: past the first interval,
// the second's start.
fn key_walk_next(keys: vec4<u32>, start: u32, size: u32) -> u32 {
    let next = start + size;
    return select(next, keys.z, start < keys.y && next >= keys.y);
}

// The keys of `range` (a query's) that the tile from `start` holds: none past its interval's end.
fn key_walk_sees(keys: vec4<u32>, start: u32, range: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(range.x, min(range.y, key_walk_end(keys, start)));
}

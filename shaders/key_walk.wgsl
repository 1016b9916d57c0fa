// A walk over the keys a workgroup's queries see together, as two intervals [x, y) then [z, w): the
// union of their ranges less the gap between two sequences' rows, where the queries are of two (a
// server's prompts read in one chunk: each sequence's rows lie in its own part of the cache, and
// walking from the first's to the second's would read every row between). The kernels walk it in
// tiles of keys, key_walk_end and key_walk_next apart. A tile from the first interval may reach
// into the second's keys, which it does not hold: each query's range within a tile is
// key_walk_sees's. key_union.wgsl finds a walk's bounds where each thread holds some of the
// queries; attend.wgsl, where every thread holds them all.

// The walk over [first, end) less [end_before, last_start) where that is a gap: z is the last
// start of a query's range, y the end of the ranges that start before it; one interval (y = z = w)
// where those meet.
fn key_walk(first: u32, last_start: u32, end_before: u32, end: u32) -> vec4<u32> {
    let gap = end_before > first && end_before < last_start;
    return select(vec4<u32>(first, end, end, end), vec4<u32>(first, end_before, last_start, end), gap);
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

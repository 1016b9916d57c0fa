// Which cache rows a query sees: attention.wgsl, attention_tiled.wgsl, attention_rows.wgsl and the
// split kernels ask it the same way. Needs step.wgsl.

// The first key a query at position end - 1 sees: the last `window` keys, or all where window is 0.
fn first_key(end: u32, window: u32) -> u32 {
    return select(0u, end - min(end, window), window > 0u);
}

// The cache rows the run's token `token` sees causally, [first, end): up to its own row, the last
// `window` of them on a sliding-window layer (0: all).
fn causal_keys(token: u32, window: u32) -> vec2<u32> {
    let first = step.tokens[token].base + first_key(step.tokens[token].pos + 1u, window);
    return vec2<u32>(first, cache_row(token) + 1u);
}

// The cache rows the run's token `token` sees, [first, end). Where causal: up to its own position
// (the last `window` of them on a sliding-window layer), or to its segment's end where its id is
// from `both_ways_from` on (a row given in place of an embedding, an image's token: Gemma 3's images
// attend both ways). Otherwise (an embedding model's encoder): every row of its sequence in the run,
// those within window / 2 of its own on a sliding-window layer.
fn key_range(token: u32, causal: bool, window: u32, both_ways_from: u32) -> vec2<u32> {
    let base = step.tokens[token].base;
    let pos = step.tokens[token].pos;
    if (causal) {
        let keys = causal_keys(token, window);
        let both_ways = step.tokens[token].id >= both_ways_from;
        return vec2<u32>(keys.x, select(keys.y, step.tokens[token].end, both_ways));
    }
    var first = base;
    var end = step.tokens[token].end;
    if (window > 0u) {
        let half = window / 2u;
        first = base + pos - min(pos, half);
        end = min(end, base + pos + half + 1u);
    }
    return vec2<u32>(first, end);
}

// Split `split` of `n_split` of the keys the run's token `token` sees, causally (flash-decoding:
// attention_split.wgsl, attention_split_lanes.wgsl, mla_attention.wgsl), [first, end): whole
// multiples of `round` keys a split, the last splits partly filled or empty.
fn split_range(token: u32, split: u32, n_split: u32, window: u32, round: u32) -> vec2<u32> {
    return split_of(causal_keys(token, window), split, n_split, round);
}

// Split `split` of `n_split` of the keys [keys.x, keys.y), as split_range splits them.
fn split_of(keys: vec2<u32>, split: u32, n_split: u32, round: u32) -> vec2<u32> {
    let per_split = ((keys.y - keys.x + n_split - 1u) / n_split + round - 1u) / round * round;
    let first = min(keys.y, keys.x + split * per_split);
    return vec2<u32>(first, min(keys.y, first + per_split));
}

// Which of a step's tokens an attention workgroup takes (attention.wgsl in a step,
// attention_split.wgsl, attention_split_lanes.wgsl): the workgroup of a sequence's first token in
// the run takes up to TQ consecutive tokens of it (a speculative check's), so that each key and value
// read serves all their queries, rather than each token's workgroup reading the cache again; the
// others' workgroups leave at once. Needs step.wgsl, key_range.wgsl and the constant TQ.

// Whether the run's token b is the one after token a in a's sequence.
fn follows(a: u32, b: u32) -> bool {
    let x = step.tokens[a];
    let y = step.tokens[b];
    return y.base == x.base && y.pos == x.pos + 1u;
}

// The tokens from the run's token `token` on that its workgroups take: up to TQ consecutive tokens
// of one sequence where `token` is the first of its sequence's in the run, or TQ, 2 TQ, ... after
// it; 0 where another token's workgroups take it.
fn tokens_taken(token: u32) -> u32 {
    var before = 0u;
    while (before < token && follows(token - before - 1u, token - before)) {
        before++;
    }
    if (before % TQ != 0u) {
        return 0u;
    }
    var n = 1u;
    while (n < TQ && token + n < step.n_tokens && follows(token + n - 1u, token + n)) {
        n++;
    }
    return n;
}

// The causal keys each of the `taken` tokens from the run's token `token` on sees (a split's: their
// own windows; tokens past those taken, the last taken's).
fn taken_keys(token: u32, taken: u32, window: u32) -> array<vec2<u32>, TQ> {
    var sees: array<vec2<u32>, TQ>;
    for (var u = 0u; u < TQ; u++) {
        sees[u] = causal_keys(token + min(u, taken - 1u), window);
    }
    return sees;
}

// Split `split` of `n_split` of the keys any of the taken tokens sees (`taken_keys`), whole
// multiples of `round` keys a split (split_of): the later tokens see more.
fn taken_split(
    sees: array<vec2<u32>, TQ>,
    taken: u32,
    split: u32,
    n_split: u32,
    round: u32,
) -> vec2<u32> {
    return split_of(vec2<u32>(sees[0].x, sees[taken - 1u].y), split, n_split, round);
}

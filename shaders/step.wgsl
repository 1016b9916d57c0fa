// What a run of the plan works on, written before each submit: how many tokens it runs (one when
// decoding, up to the plan's batch when reading a prompt), the token after its last (for runs that
// score) and each token's id and place. Token t of the run is in row t of every activation buffer.
//
// A run may hold several sequences (inputs packed to embed, a step of several chats): each has its
// own rows of the KV cache, from `base` on, and a token at position `pos` of its sequence keeps its
// key and value in cache row base + pos and sees rows of its own sequence only.

struct Token {
    id: u32,
    pos: u32,  // position in its sequence: the rotation's angle, the position table's row
    base: u32, // cache row of its sequence's position 0
    end: u32,  // one past the last cache row its sequence fills in this run (what a bidirectional query sees)
}

struct Step {
    n_tokens: u32,
    next: u32,
    tokens: array<Token>,
}

// The cache row of token t's key and value.
fn cache_row(t: u32) -> u32 {
    return step.tokens[t].base + step.tokens[t].pos;
}

// The id of the token after token t: the run's next where t is its last.
fn successor(t: u32) -> u32 {
    if (t + 1u == step.n_tokens) {
        return step.next;
    }
    return step.tokens[t + 1u].id;
}

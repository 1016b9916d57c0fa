// What a run of the plan works on, written before each submit: how many tokens it runs (one when
// decoding, up to the plan's batch when reading a prompt), the token after its last (for runs that
// score) and each token's id and place. Token t of the run is in row t of every activation buffer.
//
// A run may hold several sequences (inputs packed to embed, a step of several chats): each has its
// own rows of the KV cache, from `base` on, and a token at position `pos` of its sequence keeps its
// key and value in cache row base + pos and sees rows of its own sequence only.

struct Token {
    id: u32,
    pos: u32,   // position in its sequence: its cache row past `base`, the position table's row
    base: u32,  // cache row of its sequence's position 0
    end: u32,   // one past the last cache row its sequence fills in this run (what a bidirectional query sees)
    turn: u32,  // the position it rotates at: pos, less what images before it took in rows beyond
                // their positions (Qwen's multimodal RoPE: an image advances the position by its
                // grid's longer side)
    place: u32, // an image token's row << 16 | column in its image's grid of tokens; 0 for text
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

// The position token t rotates at along multimodal RoPE's `axis` (rope_axis): its turn, plus its
// row in its image (axis 1) or its column (axis 2). Text tokens turn at their turn on every axis.
fn token_turn(t: u32, axis: u32) -> u32 {
    let token = step.tokens[t];
    switch axis {
        case 1u: { return token.turn + (token.place >> 16u); }
        case 2u: { return token.turn + (token.place & 0xffffu); }
        default: { return token.turn; }
    }
}

// The id of the token after token t: the run's next where t is its last.
fn successor(t: u32) -> u32 {
    if (t + 1u == step.n_tokens) {
        return step.next;
    }
    return step.tokens[t + 1u].id;
}

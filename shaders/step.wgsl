// What a run of the plan works on, written before each submit: the position of its first token, how
// many tokens it runs (one when decoding, up to the plan's batch when reading a prompt) and their ids.
// Token t of the run sits at position pos + t and in row t of every activation buffer.

struct Step {
    pos: u32,
    n_tokens: u32,
    tokens: array<u32>,
}

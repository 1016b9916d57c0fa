// What the sampler asks of a decode step's logits, written before each submit that reads candidates
// back: the tokens it adjusts (each once, with the times it was seen among the recent tokens and its
// bias), the penalties on those seen, and how many candidates it wants.

const PENALIZED_MAX: u32 = 256u;

struct Pick {
    k: u32,           // candidates wanted, at most the plan's K_MAX
    n_penalized: u32, // tokens in `penalized`
    repeat: f32,      // a positive logit divided by it, a negative one multiplied
    presence: f32,    // subtracted once
    frequency: f32,   // subtracted once a time seen
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    penalized: array<u32, PENALIZED_MAX>,
    counts: array<u32, PENALIZED_MAX>, // 0: not seen, only biased
    biases: array<f32, PENALIZED_MAX>,
}

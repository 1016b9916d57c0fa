// What the sampler asks of a decode step's logits, written before each submit that reads candidates
// back: the repetition penalty's tokens (each once) and factor, and how many candidates it wants.

const PENALIZED_MAX: u32 = 256u;

struct Pick {
    k: u32,           // candidates wanted, at most the plan's K_MAX
    n_penalized: u32, // tokens in `penalized`
    penalty: f32,
    _pad: u32,
    penalized: array<u32, PENALIZED_MAX>,
}

// The bias and the penalties, in place, on the logits of the tokens the sampler names (each once, as
// llama.cpp applies them): the bias added, then for a token seen among the recent ones, a positive
// logit divided by the repetition penalty, a negative one multiplied, the frequency penalty
// subtracted once a time it was seen and the presence penalty once. A thread per token. Needs
// pick.wgsl.

struct Params {
    n: u32,   // logits in the row
    row: u32, // where the row starts in `logits`
}

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read> pick: Pick;
@group(0) @binding(2) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= pick.n_penalized) {
        return;
    }
    let t = pick.penalized[i];
    if (t >= P.n) {
        return;
    }
    let l = logits[P.row + t] + pick.biases[i];
    let seen = pick.counts[i];
    if (seen == 0u) {
        logits[P.row + t] = l;
        return;
    }
    let repeated = select(l * pick.repeat, l / pick.repeat, l > 0.0);
    logits[P.row + t] = repeated - (f32(seen) * pick.frequency + pick.presence);
}

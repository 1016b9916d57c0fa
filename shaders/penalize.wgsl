// The penalties, in place, on the logits of the tokens the sampler names (each once, as llama.cpp
// applies them): a positive logit divided by the repetition penalty, a negative one multiplied, then
// the frequency penalty subtracted once a time the token was seen and the presence penalty once. A
// thread per token. Needs pick.wgsl.

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
    let l = logits[P.row + t];
    let repeated = select(l * pick.repeat, l / pick.repeat, l > 0.0);
    logits[P.row + t] = repeated - (f32(pick.counts[i]) * pick.frequency + pick.presence);
}

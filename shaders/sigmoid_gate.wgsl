// Sigmoid gates: each value of a token's row of X times the sigmoid of its gate in the token's row of G
// (Qwen3.5's gated attention: the q projection wrote them beside q, k and v), or of the row's one gate
// (the gated shared expert: the router's product wrote it beside the router's logits). A thread per
// value of the run's rows. Needs step.wgsl.

struct Params {
    n: u32,       // values per row of X
    row_len: u32, // values per row of G
    at: u32,        // where the gates start in a row of G
    per_value: u32, // 1: a gate per value of X; 0: one gate per row
}

@group(0) @binding(0) var<storage, read_write> X: array<f32>; // (batch, n)
@group(0) @binding(1) var<storage, read> G: array<f32>;       // (batch, row_len)
@group(0) @binding(2) var<storage, read> step: Step;
@group(0) @binding(3) var<uniform> P: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let t = gid.y;
    if (t >= step.n_tokens || i >= P.n) {
        return;
    }
    let g = G[t * P.row_len + P.at + i * P.per_value];
    X[t * P.n + i] *= 1.0 / (1.0 + exp(-g));
}

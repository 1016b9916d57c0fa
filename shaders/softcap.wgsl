// Row t of X = cap * tanh(row t / cap), in place: Gemma 2's soft-capping of the final logits. A thread
// per value of the run's rows. Needs step.wgsl.

struct Params {
    n: u32,    // values per row
    cap: f32,
}

@group(0) @binding(0) var<storage, read_write> X: array<f32>; // (batch, n)
@group(0) @binding(1) var<storage, read> step: Step;
@group(0) @binding(2) var<uniform> P: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let t = gid.y;
    if (t >= step.n_tokens || i >= P.n) {
        return;
    }
    let at = t * P.n + i;
    // tanh of a clamped argument: some backends compute tanh by exp, which overflows.
    X[at] = P.cap * tanh(clamp(X[at] / P.cap, -20.0, 20.0));
}

// Row 0 of X = its row n_tokens - 1, in place: the state of a prompt chunk's last token moved to
// where a one-token head reads it. A thread per value. Needs step.wgsl.
//
// In place is safe: thread i writes value i of row 0 and reads value i of the last row, which no
// other thread writes (the two are the same value only when the run has one token).

struct Params {
    n: u32, // values per row
}

@group(0) @binding(0) var<storage, read_write> X: array<f32>; // (batch, n)
@group(0) @binding(1) var<storage, read> step: Step;
@group(0) @binding(2) var<uniform> P: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= P.n) {
        return;
    }
    X[i] = X[(step.n_tokens - 1u) * P.n + i];
}

// Y = X clamped to [lo, hi], for each token row of the run: the bounds a product's input or output
// is held within (Gemma 4's vision encoder clips its linear layers). One thread per value. Needs
// step.wgsl.

struct Params {
    n: u32, // values per row
    lo: f32,
    hi: f32,
}

@group(0) @binding(0) var<storage, read> X: array<f32>;         // (batch, n)
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;   // (batch, n)
@group(0) @binding(2) var<storage, read> step: Step;
@group(0) @binding(3) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < P.n && gid.y < step.n_tokens) {
        let i = gid.y * P.n + gid.x;
        Y[i] = clamp(X[i], P.lo, P.hi);
    }
}

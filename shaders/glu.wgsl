// h = glu(gate, up) (an activation file's: activation(gate) * up, or a variant), for each token row of
// the run. Gate and up may be two halves of one buffer (one stacked matrix made both), or interleaved
// in it (spacing 2: gate's values at even places, up's at odd), bound twice: each has its own offset
// and its own row stride. Needs step.wgsl and an activation file.

struct Params {
    n: u32,        // values per token row of h
    g_offset: u32,
    u_offset: u32,
    g_stride: u32, // values per token row of G
    u_stride: u32, // values per token row of U
    spacing: u32,  // between consecutive values of G and of U: 1, or 2 where they are interleaved
}

@group(0) @binding(0) var<storage, read> G: array<f32>;          // (batch, g_stride)
@group(0) @binding(1) var<storage, read> U: array<f32>;          // (batch, u_stride)
@group(0) @binding(2) var<storage, read_write> H: array<f32>;    // (batch, n)
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < P.n && gid.y < step.n_tokens) {
        let at = gid.x * P.spacing;
        let g = G[gid.y * P.g_stride + P.g_offset + at];
        H[gid.y * P.n + gid.x] = glu(g, U[gid.y * P.u_stride + P.u_offset + at]);
    }
}

// x += T's row for each token of the run: the row of its position (learned absolute positions, with
// BERT's token-type row folded in at load), or row 0 for every token where the table has one row (a
// token-type row alone). One thread per value. Needs step.wgsl.

struct Params {
    n: u32,         // values per row
    by_position: u32, // 1: row pos + t; 0: row 0
}

@group(0) @binding(0) var<storage, read> T: array<f32>;         // (rows, n)
@group(0) @binding(1) var<storage, read_write> X: array<f32>;   // (batch, n)
@group(0) @binding(2) var<storage, read> step: Step;
@group(0) @binding(3) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < P.n && gid.y < step.n_tokens) {
        let row = select(0u, step.tokens[gid.y].pos, P.by_position != 0u);
        X[gid.y * P.n + gid.x] += T[row * P.n + gid.x];
    }
}

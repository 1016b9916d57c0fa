// x += T's row for the token's column plus T's row for its row, for each patch of an image's grid
// (Gemma 4's vision encoder learns a table of positions for each axis: rows 0..size of T for
// columns, size..2 size for rows). One thread per value. Needs step.wgsl and grid.wgsl.

struct Params {
    n: u32,    // values per row
    size: u32, // positions each axis's table holds
}

@group(0) @binding(0) var<storage, read> T: array<f32>;         // (2 * size, n)
@group(0) @binding(1) var<storage, read_write> X: array<f32>;   // (batch, n)
@group(0) @binding(2) var<storage, read> grid: Grid;
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let t = gid.y;
    if (c < P.n && t < step.n_tokens) {
        let at = grid_place(grid, t);
        X[t * P.n + c] += T[at.x * P.n + c] + T[(P.size + at.y) * P.n + c];
    }
}

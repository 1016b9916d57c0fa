// x += a learned table of positions resized to the image's grid, for each patch: the table is a
// square of side x side rows, resized bilinearly with its corners on the grid's corners (ggml's
// bilinear interpolation with aligned corners, as llama.cpp resizes Qwen-VL's positions to each
// image). One thread per value. Needs step.wgsl and grid.wgsl.

struct Params {
    n: u32,    // values per row
    side: u32, // the table's rows a side
}

@group(0) @binding(0) var<storage, read> T: array<f32>;         // (side * side, n), row by row
@group(0) @binding(1) var<storage, read_write> X: array<f32>;   // (batch, n)
@group(0) @binding(2) var<storage, read> grid: Grid;
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u;

// Where place i of `out` lands on the table's side: its two neighbours there and the weight of the
// second.
fn source(i: u32, out: u32) -> vec3<f32> {
    var scale = f32(out) / f32(P.side);
    if (out > 1u && P.side > 1u) {
        scale = f32(out - 1u) / f32(P.side - 1u);
    }
    let at = f32(i) / scale;
    let last = f32(P.side - 1u);
    let lo = min(floor(at), last);
    let hi = min(lo + 1.0, last);
    return vec3<f32>(lo, hi, clamp(at - lo, 0.0, 1.0));
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let t = gid.y;
    if (c >= P.n || t >= step.n_tokens) {
        return;
    }
    let place = grid_place(grid, t);
    let sx = source(place.x, grid.cols);
    let sy = source(place.y, grid.rows);
    let row = vec2<u32>(u32(sy.x), u32(sy.y)) * P.side;
    let col = vec2<u32>(u32(sx.x), u32(sx.y));
    let a = T[(row.x + col.x) * P.n + c];
    let b = T[(row.x + col.y) * P.n + c];
    let d = T[(row.y + col.x) * P.n + c];
    let e = T[(row.y + col.y) * P.n + c];
    let dx = sx.z;
    let dy = sy.z;
    X[t * P.n + c] += a * (1.0 - dx) * (1.0 - dy) + b * dx * (1.0 - dy) + d * (1.0 - dx) * dy + e * dx * dy;
}

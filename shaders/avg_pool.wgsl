// A grid of token rows averaged in squares, then scaled per value: the cols x rows grid of X's rows
// (row-major, its size in `grid`, set for each image) becomes the (cols / k) x (rows / k) grid of
// Y's, each row (the mean of a k x k square * mul - sub) * scale. Gemma 3's and Gemma 4's vision
// tokens, pooled before the projection (Gemma 4 scales them by sqrt(n_embd) and standardizes them;
// Gemma 3 takes the mean: mul 1, sub 0, scale 1). One thread per value. Needs grid.wgsl.

struct Params {
    n: u32,   // values per row
    k: u32,   // the square's side
    mul: f32,
}

@group(0) @binding(0) var<storage, read> X: array<f32>;        // (cols * rows, n)
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;  // ((cols / k) * (rows / k), n)
@group(0) @binding(2) var<storage, read> grid: Grid;
@group(0) @binding(3) var<storage, read> sub: array<f32>;      // (n)
@group(0) @binding(4) var<storage, read> scale: array<f32>;    // (n)
@group(0) @binding(5) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let out_cols = grid.cols / P.k;
    let row = gid.y;
    let c = gid.x;
    if (c >= P.n || row >= out_cols * (grid.rows / P.k)) {
        return;
    }
    let y0 = (row / out_cols) * P.k;
    let x0 = (row % out_cols) * P.k;
    var sum = 0.0;
    for (var y = y0; y < y0 + P.k; y++) {
        for (var x = x0; x < x0 + P.k; x++) {
            sum += X[(y * grid.cols + x) * P.n + c];
        }
    }
    Y[row * P.n + c] = (sum / f32(P.k * P.k) * P.mul - sub[c]) * scale[c];
}

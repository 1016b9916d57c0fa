// A grid of token rows averaged in squares: the side x side grid of X's rows (row-major) becomes the
// (side / k) x (side / k) grid of Y's, each row the mean of a k x k square (Gemma 3's vision tokens,
// pooled before the projection). One thread per value.

struct Params {
    n: u32,    // values per row
    side: u32, // X's grid is side x side rows
    k: u32,    // the square's side
}

@group(0) @binding(0) var<storage, read> X: array<f32>;        // (side * side, n)
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;  // ((side / k)^2, n)
@group(0) @binding(2) var<uniform> P: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let out_side = P.side / P.k;
    let row = gid.y;
    if (gid.x >= P.n || row >= out_side * out_side) {
        return;
    }
    let y0 = (row / out_side) * P.k;
    let x0 = (row % out_side) * P.k;
    var sum = 0.0;
    for (var y = y0; y < y0 + P.k; y++) {
        for (var x = x0; x < x0 + P.k; x++) {
            sum += X[(y * P.side + x) * P.n + gid.x];
        }
    }
    Y[row * P.n + gid.x] = sum / f32(P.k * P.k);
}

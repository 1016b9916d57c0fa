// How the tile files read x when a product norms it on the way in, rmsnorm(x) = x / sqrt(mean(x^2) +
// eps) * g (a parallel step's or a speculative check's products, where the norm is folded into
// them): each x comes times its gain g, and each token's sums are scaled by 1 / sqrt(mean(x^2) +
// eps), from the squares of the x the tile read (every x of its tokens' rows, which a tile reads
// whole). The kernel declares P (with cols).

const X_NORMED: bool = true;

override NORM_EPS: f32 = 1e-6;

// (cols) the norm's gain. Its binding is past every store's (`NORM_GAIN_BINDING` in gpu/pipelines.rs).
@group(0) @binding(15) var<storage, read> G: array<vec4<f32>>;

fn tile_gain(j: u32) -> vec4<f32> {
    return G[j];
}

fn tile_scale(squares: f32) -> f32 {
    return inverseSqrt(squares / f32(P.cols) + NORM_EPS);
}

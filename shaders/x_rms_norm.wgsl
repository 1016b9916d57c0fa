// How the row_dot files read x when a product norms it on the way in, rmsnorm(x) = x / sqrt(mean(x^2)
// + eps) * g: each x comes times its gain g, and its square is added to the thread's sum of squares;
// the kernel then scales each row's sum by its token's 1 / sqrt(mean(x^2) + eps), the squares summed
// over the threads that between them read the whole row of x (the row's own, or the workgroup where
// it quantizes x together). No x is read twice: the norm's own dispatch, and its write and read of the
// normed rows, are saved for a multiply-add per x read. Needs a row_dot file; the kernel declares X
// and TPR.

override NORM_EPS: f32 = 1e-6;

// (cols) the norm's gain. Its binding is past every store's (`NORM_GAIN_BINDING` in gpu/pipelines.rs).
@group(0) @binding(15) var<storage, read> G: array<vec4<f32>>;

// This thread's sums of the squares of the x it read, one per token (.x: one token's products).
var<private> squares: vec4<f32>;

// Forgets the squares summed so far, before the kernel reads other tokens' x.
fn x_restart() {
    squares = vec4<f32>(0.0);
}

fn x_at(x0: u32, j: u32) -> vec4<f32> {
    let x = X[x0 + j];
    squares.x += dot(x, x);
    return x * G[j];
}

fn x4_at(x0: vec4<u32>, j: u32) -> mat4x4<f32> {
    let x = mat4x4<f32>(X[x0.x + j], X[x0.y + j], X[x0.z + j], X[x0.w + j]);
    squares += vec4<f32>(dot(x[0], x[0]), dot(x[1], x[1]), dot(x[2], x[2]), dot(x[3], x[3]));
    let g = G[j];
    return mat4x4<f32>(x[0] * g, x[1] * g, x[2] * g, x[3] * g);
}

// 1 / sqrt(mean(x^2) + eps) of the row thread t works on, in each of its threads, once the threads
// that read x for the row (the row_dot file's x_read_sum) have read it. Call from uniform control
// flow, after the row's own sums.
fn x_scale(t: u32, cols: u32) -> f32 {
    // The row's last sum is read before row_sum's workgroup memory is written again.
    workgroupBarrier();
    return inverseSqrt(x_read_sum(t, squares.x) / f32(cols) + NORM_EPS);
}

// x_scale for the four tokens of x4_at.
fn x_scale4(t: u32, cols: u32) -> vec4<f32> {
    workgroupBarrier();
    return inverseSqrt(x_read_sum4(t, squares) / f32(cols) + vec4<f32>(NORM_EPS));
}

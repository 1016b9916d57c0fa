// How the row_dot files read x: as it is (x_rms_norm.wgsl is the form that norms it on the way in).
// The kernel declares X; x_scale and x_scale4 are 1 here.

// vec4 j of the row of x that starts at vec4 x0.
fn x_at(x0: u32, j: u32) -> vec4<f32> {
    return X[x0 + j];
}

// vec4 j of four tokens' rows, starting at vec4s x0.x, .y, .z, .w, as columns.
fn x4_at(x0: vec4<u32>, j: u32) -> mat4x4<f32> {
    return mat4x4<f32>(X[x0.x + j], X[x0.y + j], X[x0.z + j], X[x0.w + j]);
}

// Forgets what was read, before the kernel reads other tokens' x (nothing here).
fn x_restart() {}

fn x_scale(t: u32, cols: u32) -> f32 {
    return 1.0;
}

fn x_scale4(t: u32, cols: u32) -> vec4<f32> {
    return vec4<f32>(1.0);
}

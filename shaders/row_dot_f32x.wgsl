// What the row_dot files that read x as f32 straight from the x file (row_dot.wgsl, row_dot_blocks.wgsl,
// row_dot_parts.wgsl) share with row_dot_q8.wgsl, which quantizes it first.

// Nothing to do before the rows: each thread reads x as it goes.
fn x_prepare(t: u32, x0: u32, cols: u32) {}

fn x_prepare4(t: u32, x0: vec4<u32>, cols: u32) {}

fn x_prepare_rows(t: u32, stride: u32, cols: u32) {}

// The sum of v over the threads that between them read the row of x once for the row thread t works
// on: its TPR threads. Call from uniform control flow.
fn x_read_sum(t: u32, v: f32) -> f32 {
    return pair_sum(t, vec2<f32>(v, 0.0)).x;
}

// x_read_sum of four tokens' values.
fn x_read_sum4(t: u32, v: vec4<f32>) -> vec4<f32> {
    return pair_sum4(t, array<vec4<f32>, 2>(v, vec4<f32>(0.0)))[0];
}

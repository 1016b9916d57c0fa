// How the tile files read x: as it is (tile_x_rms_norm.wgsl is the form that norms it on the way in).
// A tile file sums the squares of the x it reads whatever the form; here nothing uses them, and the
// compiler drops them.

const X_NORMED: bool = false;

// What x's vec4 j of a row is multiplied by.
fn tile_gain(j: u32) -> vec4<f32> {
    return vec4<f32>(1.0);
}

// What a token's sums are scaled by, from the sum of the squares of its row of x.
fn tile_scale(squares: f32) -> f32 {
    return 1.0;
}

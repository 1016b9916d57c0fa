// SwiGLU's h from gate and up: silu(gate) * up, silu(x) = x * sigmoid(x).
fn glu(gate: f32, up: f32) -> f32 {
    return gate / (1.0 + exp(-gate)) * up;
}

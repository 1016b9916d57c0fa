// The gate's activation of a SwiGLU feed-forward block: silu(x) = x * sigmoid(x).
fn activation(x: f32) -> f32 {
    return x / (1.0 + exp(-x));
}

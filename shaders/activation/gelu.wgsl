// GeGLU's h from gate and up: GELU(gate) * up, GELU in its tanh approximation as ggml computes it.
// tanh's argument is clamped where tanh(u) is already +-1 in f32, so that no exp inside it overflows
// to inf / inf.
fn glu(gate: f32, up: f32) -> f32 {
    let u = 0.7978845608028654 * gate * (1.0 + 0.044715 * gate * gate);
    return 0.5 * gate * (1.0 + tanh(clamp(u, -10.0, 10.0))) * up;
}

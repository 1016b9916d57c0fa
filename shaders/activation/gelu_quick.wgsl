// GELU's quick approximation times up: gate * sigmoid(1.702 gate) * up (CLIP's encoders; llama.cpp's
// vision encoders where the projector file names no activation).
fn glu(gate: f32, up: f32) -> f32 {
    return gate / (1.0 + exp(-1.702 * gate)) * up;
}

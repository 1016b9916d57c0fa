// gpt-oss's clamped SwiGLU: the gate clamped above at 7 and up to [-7, 7], then
// gate * sigmoid(1.702 gate) * (up + 1) (llama.cpp's swiglu_oai with gpt-oss's alpha and limit).
fn glu(gate: f32, up: f32) -> f32 {
    let g = min(gate, 7.0);
    let u = clamp(up, -7.0, 7.0);
    return g / (1.0 + exp(-1.702 * g)) * (u + 1.0);
}

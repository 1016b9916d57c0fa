// Rotary position angles, shared by the kernels that rotate. Plain RoPE, linear scaling (freq_scale) and
// YaRN (ext_factor > 0: each pair's angle mixes the interpolated and the original angle by a ramp over
// corr_low..corr_high, and the magnitude grows by 0.1 ln(1 / freq_scale)), as ggml computes them. Each
// pair's frequency (freq_base^(-2i / n_rot) over its divisor) comes from a buffer computed at load:
// a pow per pair here cost some GPU routes (Dawn's OpenGL ES backend on ANGLE) 2 ms a dispatch.

struct Rope {
    n_rot: u32,        // dimensions rotated, from the first
    neox: u32,         // 1: rotate (i, i + n_rot/2); 0: rotate (2i, 2i+1)
    pad: u32,          // a struct in a uniform takes 32 bytes here, not 28
    freq_scale: f32,   // 1 / the scaling factor
    ext_factor: f32,   // YaRN's extrapolation mix; 0: off
    attn_factor: f32,  // magnitude of (cos, sin)
    corr_low: f32,     // YaRN's ramp, in pairs
    corr_high: f32,
}

// (cos, sin) times the magnitude for pair i, of frequency `freq`, at position pos.
fn rope_cos_sin(r: Rope, pos: u32, i: u32, freq: f32) -> vec2<f32> {
    let extrapolated = f32(pos) * freq;
    let interpolated = r.freq_scale * extrapolated;
    var theta = interpolated;
    var magnitude = r.attn_factor;
    if (r.ext_factor != 0.0) {
        let y = (f32(i) - r.corr_low) / max(0.001, r.corr_high - r.corr_low);
        let mix = (1.0 - clamp(y, 0.0, 1.0)) * r.ext_factor;
        theta = interpolated * (1.0 - mix) + extrapolated * mix;
        magnitude *= 1.0 + 0.1 * log(1.0 / r.freq_scale);
    }
    return vec2<f32>(cos(theta), sin(theta)) * magnitude;
}

// The two dimensions pair i rotates.
fn rope_pair(r: Rope, i: u32) -> vec2<u32> {
    if (r.neox == 1u) {
        return vec2<u32>(i, i + r.n_rot / 2u);
    }
    return vec2<u32>(2u * i, 2u * i + 1u);
}

// Rotary position angles, shared by the kernels that rotate. Plain RoPE, linear scaling (freq_scale) and
// YaRN (ext_factor > 0: each pair's angle mixes the interpolated and the original angle by a ramp over
// corr_low..corr_high, and the magnitude grows by 0.1 ln(1 / freq_scale)), as ggml computes them. Each
// pair's frequency (freq_base^(-2i / n_rot) over its divisor) comes from a buffer computed at load:
// a pow per pair here cost some GPU routes (Dawn's OpenGL ES backend on ANGLE) 2 ms a dispatch.

struct Rope {
    n_rot: u32,        // dimensions rotated, from the first
    neox: u32,         // 1: rotate (i, i + n_rot/2); 0: rotate (2i, 2i+1)
    sections: u32,     // interleaved multimodal RoPE's pairs on each axis, a byte each (t | h << 8 |
                       // w << 16 | e << 24); 0: plain RoPE
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

// The axis pair i turns along (token_turn): in interleaved multimodal RoPE (Qwen3.5) pair i falls in
// sector i mod the sections' sum, sectors taken in turn by time, height and width (0, 1, 2, 0, ...)
// while each has pairs left, the fourth axis's after (whose pairs the model's frequencies keep still,
// so any position does). 0 in plain RoPE.
fn rope_axis(r: Rope, i: u32) -> u32 {
    if (r.sections == 0u) {
        return 0u;
    }
    let s = vec4<u32>(r.sections & 255u, (r.sections >> 8u) & 255u, (r.sections >> 16u) & 255u, r.sections >> 24u);
    let sector = i % (s.x + s.y + s.z + s.w);
    let axis = sector % 3u;
    return select(0u, axis, sector < 3u * s[axis]);
}

// The two dimensions pair i rotates.
fn rope_pair(r: Rope, i: u32) -> vec2<u32> {
    if (r.neox == 1u) {
        return vec2<u32>(i, i + r.n_rot / 2u);
    }
    return vec2<u32>(2u * i, 2u * i + 1u);
}

// The pair that value d of a rotated vector belongs to (rope_pair's inverse), and whether d is the
// pair's first: for kernels that write a rotated vector a few neighbouring values at a time.
fn rope_pair_of(r: Rope, d: u32) -> vec2<u32> {
    if (r.neox == 1u) {
        return vec2<u32>(d % (r.n_rot / 2u), u32(d < r.n_rot / 2u));
    }
    return vec2<u32>(d / 2u, u32(d % 2u == 0u));
}

// How delta_net.wgsl reads a token's q, k and v where it convolves them itself (a decode step's, a
// step's few tokens): each column's thread runs the causal convolution and SiLU of delta_conv.wgsl
// over its three channels (q's and k's of key head kh, v's of value head h), their taps held in
// registers for the run, so the convolution needs no dispatch of its own and the rows no write.
// Value heads that share a key head convolve its q and k alike; each keeps its own copy of their last
// inputs in the rolling state, so no workgroup reads what another writes (delta_conv.wgsl keeps every
// copy). Needs delta_rule.wgsl.

@group(0) @binding(6) var<storage, read> conv: array<f32>;             // (channels, conv_kernel) oldest tap first
@group(0) @binding(7) var<storage, read_write> conv_state: array<f32>; // (n_v_heads, 3, dim, conv_kernel - 1)
@group(0) @binding(8) var<uniform> P: Params;

const MAX_TAPS: u32 = 8u;

// The weights of the thread's q, k and v channels, oldest tap first.
var<private> taps: array<vec3<f32>, MAX_TAPS>;
// past[i]: the inputs i + 1 steps before the newest held.
var<private> past: array<vec3<f32>, MAX_TAPS>;

// The conv channels of column j: q's and k's of key head kh, v's of value head h.
fn qkv_channels(h: u32, kh: u32, j: u32) -> vec3<u32> {
    let n = P.dim;
    return vec3<u32>(kh * n + j, (P.n_k_heads + kh) * n + j, (2u * P.n_k_heads + h) * n + j);
}

// Where value head h holds tap i of column j of part `part` (0: q, 1: k, 2: v).
fn conv_state_at(h: u32, part: u32, j: u32, i: u32) -> u32 {
    return ((h * 3u + part) * P.dim + j) * (P.conv_kernel - 1u) + i;
}

// Before the tokens: the taps, and the last inputs (none where the sequence starts).
fn qkv_begin(h: u32, kh: u32, j: u32, fresh: bool) {
    let c = qkv_channels(h, kh, j);
    let k = P.conv_kernel;
    for (var i = 0u; i < k; i++) {
        taps[i] = vec3<f32>(conv[c.x * k + i], conv[c.y * k + i], conv[c.z * k + i]);
    }
    for (var i = 0u; i + 1u < k; i++) {
        let held = vec3<f32>(
            conv_state[conv_state_at(h, 0u, j, i)],
            conv_state[conv_state_at(h, 1u, j, i)],
            conv_state[conv_state_at(h, 2u, j, i)]
        );
        past[i] = select(held, vec3<f32>(0.0), fresh);
    }
}

// Token t's column j of q, k and v, convolved over the inputs before it and through SiLU.
fn qkv_at(t: u32, h: u32, kh: u32, j: u32) -> vec3<f32> {
    let c = qkv_channels(h, kh, j);
    let row = t * P.row_len;
    let x = vec3<f32>(X[row + c.x], X[row + c.y], X[row + c.z]);
    let held = P.conv_kernel - 1u;
    var acc = taps[held] * x;
    for (var i = 0u; i < held; i++) {
        acc += taps[i] * past[i];
    }
    for (var i = 0u; i + 1u < held; i++) {
        past[i] = past[i + 1u];
    }
    if (held > 0u) {
        past[held - 1u] = x;
    }
    return acc / (vec3<f32>(1.0) + exp(-acc));
}

// After the tokens: the run's last inputs, for the next run.
fn qkv_end(h: u32, j: u32) {
    for (var i = 0u; i + 1u < P.conv_kernel; i++) {
        conv_state[conv_state_at(h, 0u, j, i)] = past[i].x;
        conv_state[conv_state_at(h, 1u, j, i)] = past[i].y;
        conv_state[conv_state_at(h, 2u, j, i)] = past[i].z;
    }
}

// The causal depthwise convolution before a Gated DeltaNet layer's recurrence (Qwen3.5's linear
// attention): each channel of the run's rows, in order, convolved with its KERNEL weights over itself
// and the previous KERNEL - 1 inputs, then SiLU, written back in place. The previous inputs come from
// the channel's rolling state (zeros at position 0, where a sequence starts), which the kernel leaves
// holding the run's last KERNEL - 1 inputs. A thread per channel walks the run's tokens: no channel
// reads another's values, so the update in place is safe. The state holds each value head's copy of
// its channels' inputs (its key head's q and k, its own v), as delta_inputs_conv.wgsl reads them where
// the recurrence convolves a step's tokens itself: the kernel reads a channel's first copy and writes
// them all. Needs step.wgsl.

struct Params {
    channels: u32,  // conv channels: the first `channels` values of each row
    row_len: u32,   // values per row of X
    kernel: u32,    // taps, at most MAX_TAPS
    dim: u32,       // of a head
    n_k_heads: u32,
    n_v_heads: u32,
}

@group(0) @binding(0) var<storage, read_write> X: array<f32>;     // (batch, row_len): in, then out
@group(0) @binding(1) var<storage, read> W: array<f32>;           // (channels, kernel) oldest tap first
@group(0) @binding(2) var<storage, read_write> state: array<f32>; // (n_v_heads, 3, dim, kernel - 1)
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u;
const MAX_TAPS: u32 = 8u;

// Channel c's copies in the state: its part (0: q, 1: k, 2: v), its first value head, and the heads
// between copies (q and k of key head kh: value heads kh, kh + n_k_heads, ...; v: its own head alone).
fn copies_of(c: u32) -> vec3<u32> {
    let head = c / P.dim;
    if (head < 2u * P.n_k_heads) {
        return vec3<u32>(head / P.n_k_heads, head % P.n_k_heads, P.n_k_heads);
    }
    return vec3<u32>(2u, head - 2u * P.n_k_heads, P.n_v_heads);
}

// Where value head h holds tap i of channel c (of part `part`).
fn state_at(h: u32, part: u32, c: u32, i: u32) -> u32 {
    return ((h * 3u + part) * P.dim + c % P.dim) * (P.kernel - 1u) + i;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    if (c >= P.channels) {
        return;
    }
    let held = P.kernel - 1u;
    var w: array<f32, MAX_TAPS>;
    var past: array<f32, MAX_TAPS>; // past[j]: the input j + 1 steps before the newest held
    for (var j = 0u; j < P.kernel; j++) {
        w[j] = W[c * P.kernel + j];
    }
    let fresh = step.tokens[0].pos == 0u;
    let copies = copies_of(c);
    for (var j = 0u; j < held; j++) {
        past[j] = select(state[state_at(copies.y, copies.x, c, j)], 0.0, fresh);
    }
    for (var t = 0u; t < step.n_tokens; t++) {
        let at = t * P.row_len + c;
        let x = X[at];
        var acc = w[held] * x;
        for (var j = 0u; j < held; j++) {
            acc += w[j] * past[j];
        }
        for (var j = 0u; j + 1u < held; j++) {
            past[j] = past[j + 1u];
        }
        if (held > 0u) {
            past[held - 1u] = x;
        }
        X[at] = acc / (1.0 + exp(-acc));
    }
    for (var h = copies.y; h < P.n_v_heads; h += copies.z) {
        for (var j = 0u; j < held; j++) {
            state[state_at(h, copies.x, c, j)] = past[j];
        }
    }
}

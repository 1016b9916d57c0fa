// The causal depthwise convolution before a Gated DeltaNet layer's recurrence (Qwen3.5's linear
// attention): each channel of the run's rows, in order, convolved with its KERNEL weights over itself
// and the previous KERNEL - 1 inputs, then SiLU, written back in place. The previous inputs come from
// the channel's rolling state (zeros at position 0, where a sequence starts), which the kernel leaves
// holding the run's last KERNEL - 1 inputs. A thread per channel walks the run's tokens: no channel
// reads another's values, so the update in place is safe. Needs step.wgsl.

struct Params {
    channels: u32, // conv channels: the first `channels` values of each row
    row_len: u32,  // values per row of X
    kernel: u32,   // taps, at most MAX_TAPS
    pad: u32,
}

@group(0) @binding(0) var<storage, read_write> X: array<f32>;     // (batch, row_len): in, then out
@group(0) @binding(1) var<storage, read> W: array<f32>;           // (channels, kernel) oldest tap first
@group(0) @binding(2) var<storage, read_write> state: array<f32>; // (channels, kernel - 1) oldest first
@group(0) @binding(3) var<storage, read> step: Step;
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u;
const MAX_TAPS: u32 = 8u;

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
    for (var j = 0u; j < held; j++) {
        past[j] = select(state[c * held + j], 0.0, fresh);
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
    for (var j = 0u; j < held; j++) {
        state[c * held + j] = past[j];
    }
}

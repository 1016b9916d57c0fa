// out[t] = log softmax(row t of the logits)[the token after token t]: what the model gives the text's next
// token, all a perplexity needs of a row of n_vocab logits. One workgroup per token of the run; the token
// after the run's last is step.next (StepInput::write_followed puts it there). Needs step.wgsl
// and reduce.wgsl.

struct Params {
    n_vocab: u32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;     // (batch, n_vocab)
@group(0) @binding(1) var<storage, read> step: Step;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // (batch)
@group(0) @binding(3) var<uniform> P: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (wg.y >= step.n_tokens) {
        return;
    }
    let row = wg.y * P.n_vocab;
    var top = -3.0e38;
    for (var i = t; i < P.n_vocab; i += WG) {
        top = max(top, logits[row + i]);
    }
    top = reduce_max(t, top);
    var sum = 0.0;
    for (var i = t; i < P.n_vocab; i += WG) {
        sum += exp(logits[row + i] - top);
    }
    sum = reduce_sum(t, sum);
    if (t == 0u) {
        out[wg.y] = logits[row + successor(wg.y)] - top - log(sum);
    }
}

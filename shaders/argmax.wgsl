// out[t] = the index of the largest value of row t (the first of equals, as the CPU's argmax): greedy
// decoding's choice, read back instead of the row; out[rows + t] = its chance (the bits of an f32):
// the softmax of the row at it, 1 / sum(exp(x - largest)), which tells a draft model how sure it is
// of its choice. The second pass: one workgroup per token of the run merges the triples the first
// (argmax_parts.wgsl) left for its row's parts. Needs step.wgsl and argmax_reduce.wgsl.

@group(0) @binding(0) var<storage, read> step: Step;
@group(0) @binding(1) var<storage, read_write> out: array<u32>; // choices, chances, parts
@group(0) @binding(2) var<uniform> P: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (wg.y >= step.n_tokens) {
        return;
    }
    // A thread a part (`ops::argmax` makes no more parts than the workgroup has threads).
    var v = -3.4e38;
    var i = 0xffffffffu;
    var sum = 0.0;
    if (t < P.parts) {
        let at = part_at(wg.y, t);
        v = bitcast<f32>(out[at]);
        i = out[at + 1u];
        sum = bitcast<f32>(out[at + 2u]);
    }
    reduce_best(t, v, i, sum);
    if (t == 0u) {
        // A row with no value above -3.4e38 (all -inf or NaN) picks 0, as the CPU's argmax does.
        let none = best_index[0] == 0xffffffffu;
        out[wg.y] = select(best_index[0], 0u, none);
        out[P.rows + wg.y] = bitcast<u32>(select(1.0 / sums[0], 0.0, none));
    }
}

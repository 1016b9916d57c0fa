// A Gated DeltaNet layer's recurrence (Qwen3.5's linear attention), after its convolution: for each
// value head and each token of the run in order, q and k of the head's key head L2-normalised, the
// head's state S (key dim x value dim) decayed by exp(g), corrected towards v along k by the delta rule
// with strength beta, and read by q; the read-out RMS-normed, scaled by the norm weights and gated by
// SiLU(z). With g = softplus(alpha + dt_bias) * a (a = -exp(A_log)) and beta = sigmoid(beta's logit):
//   S = exp(g) S;  d = beta (v - S^T k);  S = S + k d^T;  o = S^T q / sqrt(dim)
// A workgroup per value head, a thread per value column j of S. Column j of S is the thread's alone,
// so the recurrence needs no barrier, and it is held in the thread's own memory for the run (read and
// written back once, not twice a token); q and k, shared by every column, pass through workgroup memory.
// Value head h reads key head h % n_k_heads (llama.cpp's files order the value heads so).
//
// This is the token-by-token form: a decode step's (one token: S read and written once, which is its
// whole cost), and a prompt's where tuning finds it faster than the chunked form
// (delta_net_chunks.wgsl). Each token's q, k and v come from the inputs file's qkv_at: convolved
// before, in a dispatch of their own (delta_inputs_rows.wgsl), or here, on the way in
// (delta_inputs_conv.wgsl). Needs step.wgsl, reduce.wgsl, delta_rule.wgsl and an inputs file.

override WG: u32 = 128u;

var<workgroup> q_shared: array<f32, 256>;
var<workgroup> k_shared: array<f32, 256>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) j: u32) {
    let h = wg.x;
    let n = P.dim;
    let kh = h % P.n_k_heads;
    let base = h * n * n + j;
    var column: array<f32, 256>; // S[h][i][j] for i < n
    let fresh = step.tokens[0].pos == 0u; // a sequence starts from an empty state
    for (var i = 0u; i < n; i++) {
        column[i] = select(S[base + i * n], 0.0, fresh);
    }
    qkv_begin(h, kh, j, fresh);
    let w = norm[j];
    for (var t = 0u; t < step.n_tokens; t++) {
        let qkv = qkv_at(t, h, kh, j);
        let q = qkv.x;
        let k = qkv.y;
        let v = qkv.z;
        let q_norm = inverseSqrt(reduce_sum(j, q * q) + P.eps);
        let k_norm = inverseSqrt(reduce_sum(j, k * k) + P.eps);
        q_shared[j] = q * q_norm * inverseSqrt(f32(n));
        k_shared[j] = k * k_norm;
        workgroupBarrier();
        let beta = write_strength(t, h);
        let decay = exp(log_decay(t, h));
        var sk = 0.0;
        for (var i = 0u; i < n; i++) {
            sk += column[i] * k_shared[i];
        }
        let d = (v - decay * sk) * beta;
        var o = 0.0;
        for (var i = 0u; i < n; i++) {
            let s = decay * column[i] + k_shared[i] * d;
            column[i] = s;
            o += s * q_shared[i];
        }
        // The gated norm; its reduction's barriers also keep the next token's q and k from
        // overwriting this one's while a thread still reads them.
        let scale = inverseSqrt(reduce_sum(j, o * o) / f32(n) + P.eps);
        O[t * P.n_v_heads * n + h * n + j] = o * scale * w * silu_gate(t, h, j);
    }
    for (var i = 0u; i < n; i++) {
        S[base + i * n] = column[i];
    }
    qkv_end(h, j);
}

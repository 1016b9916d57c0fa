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
// This is the token-by-token form. The chunked (WY) form turns a chunk's updates into matrix products,
// which pays where a GPU's matrix units are idle during a prompt; here a chunk's 64 tokens run in one
// dispatch, S read and written by the one thread that owns each column, and a decode step (one token)
// reads and writes S once, which is its whole cost. Needs step.wgsl and reduce.wgsl.

struct Params {
    n_k_heads: u32,
    n_v_heads: u32,
    dim: u32,      // of a key and of a value head: WG
    row_len: u32,  // values per row of X
    z_at: u32,     // where z's values start in a row (after the conv channels q, k, v)
    beta_at: u32,  // beta's logits, one per value head
    alpha_at: u32, // alpha, one per value head
    eps: f32,      // the norms' epsilon
}

@group(0) @binding(0) var<storage, read> X: array<f32>;           // (batch, row_len): q, k, v, z, beta, alpha
@group(0) @binding(1) var<storage, read_write> S: array<f32>;     // (n_v_heads, dim, dim): S[h][i][j], i over keys
@group(0) @binding(2) var<storage, read> gates: array<f32>;       // (2, n_v_heads): a, then dt_bias
@group(0) @binding(3) var<storage, read> norm: array<f32>;        // (dim) the read-out's norm weights
@group(0) @binding(4) var<storage, read_write> O: array<f32>;     // (batch, n_v_heads * dim)
@group(0) @binding(5) var<storage, read> step: Step;
@group(0) @binding(6) var<uniform> P: Params;

override WG: u32 = 128u;

var<workgroup> q_shared: array<f32, 256>;
var<workgroup> k_shared: array<f32, 256>;

fn softplus(x: f32) -> f32 {
    // ggml's threshold: past 20, softplus(x) is x to f32 precision (and exp would overflow later).
    return select(log(1.0 + exp(x)), x, x > 20.0);
}

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
    let a = gates[h];
    let dt_bias = gates[P.n_v_heads + h];
    let w = norm[j];
    for (var t = 0u; t < step.n_tokens; t++) {
        let row = t * P.row_len;
        let q = X[row + kh * n + j];
        let k = X[row + (P.n_k_heads + kh) * n + j];
        let v = X[row + 2u * P.n_k_heads * n + h * n + j];
        let z = X[row + P.z_at + h * n + j];
        let q_norm = inverseSqrt(reduce_sum(j, q * q) + P.eps);
        let k_norm = inverseSqrt(reduce_sum(j, k * k) + P.eps);
        q_shared[j] = q * q_norm * inverseSqrt(f32(n));
        k_shared[j] = k * k_norm;
        workgroupBarrier();
        let beta = 1.0 / (1.0 + exp(-X[row + P.beta_at + h]));
        let decay = exp(softplus(X[row + P.alpha_at + h] + dt_bias) * a);
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
        O[t * P.n_v_heads * n + h * n + j] = o * scale * w * (z / (1.0 + exp(-z)));
    }
    for (var i = 0u; i < n; i++) {
        S[base + i * n] = column[i];
    }
}

// What Gated DeltaNet's two recurrence kernels share (delta_net.wgsl, token by token, and
// delta_net_chunks.wgsl, in chunks of tokens): the layer's parameters and bindings, and each token's
// write strength and decay. The kernel declares P, of these Params, at the binding after its own
// buffers. Needs step.wgsl.

struct Params {
    n_k_heads: u32,
    n_v_heads: u32,
    dim: u32,      // of a key and of a value head: the workgroup's threads
    row_len: u32,  // values per row of X
    z_at: u32,     // where z's values start in a row (after the conv channels q, k, v)
    beta_at: u32,  // beta's logits, one per value head
    alpha_at: u32, // alpha, one per value head
    eps: f32,      // the norms' epsilon
    conv_kernel: u32, // the convolution's taps (where the kernel convolves q, k and v itself)
}

@group(0) @binding(0) var<storage, read> X: array<f32>;           // (batch, row_len): q, k, v, z, beta, alpha
@group(0) @binding(1) var<storage, read_write> S: array<f32>;     // (n_v_heads, dim, dim): S[h][i][j], i over keys
@group(0) @binding(2) var<storage, read> gates: array<f32>;       // (2, n_v_heads): a, then dt_bias
@group(0) @binding(3) var<storage, read> norm: array<f32>;        // (dim) the read-out's norm weights
@group(0) @binding(4) var<storage, read_write> O: array<f32>;     // (batch, n_v_heads * dim)
@group(0) @binding(5) var<storage, read> step: Step;

fn softplus(x: f32) -> f32 {
    // ggml's threshold: past 20, softplus(x) is x to f32 precision (and exp would overflow later).
    return select(log(1.0 + exp(x)), x, x > 20.0);
}

// Token t's write strength for value head h: beta = sigmoid(beta's logit).
fn write_strength(t: u32, h: u32) -> f32 {
    return 1.0 / (1.0 + exp(-X[t * P.row_len + P.beta_at + h]));
}

// Token t's log decay for value head h: g = softplus(alpha + dt_bias) * a.
fn log_decay(t: u32, h: u32) -> f32 {
    return softplus(X[t * P.row_len + P.alpha_at + h] + gates[P.n_v_heads + h]) * gates[h];
}

// SiLU of token t's gate for value j of head h.
fn silu_gate(t: u32, h: u32, j: u32) -> f32 {
    let z = X[t * P.row_len + P.z_at + h * P.dim + j];
    return z / (1.0 + exp(-z));
}

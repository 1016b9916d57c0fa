// How delta_net.wgsl reads a token's q, k and v: from the input projection's rows as the
// convolution's own dispatch (delta_conv.wgsl) left them, convolved.

@group(0) @binding(6) var<uniform> P: Params;

// Before the tokens: nothing to hold.
fn qkv_begin(h: u32, kh: u32, j: u32, fresh: bool) {}

// Token t's column j of q and k (key head kh) and of v (value head h).
fn qkv_at(t: u32, h: u32, kh: u32, j: u32) -> vec3<f32> {
    let row = t * P.row_len;
    let n = P.dim;
    return vec3<f32>(
        X[row + kh * n + j],
        X[row + (P.n_k_heads + kh) * n + j],
        X[row + (2u * P.n_k_heads + h) * n + j]
    );
}

// After the tokens: nothing to keep.
fn qkv_end(h: u32, j: u32) {}

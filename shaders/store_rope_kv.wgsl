// The attention projection's store: W holds q's, k's and v's rows stacked, so a pair of rows is the two
// dimensions (2i, 2i+1) of one head that RoPE rotates together (a NeoX-ordered model's q and k rows
// were reordered at load to make it so). The bias is added, q and k are rotated at the token's
// position (dimensions past n_rot pass through); q goes to the token's row of Q, k and v to the cache
// at that position. Needs rope.wgsl, and kv_f32.wgsl or kv_f16.wgsl.

struct Params {
    rope: Rope,
    rows: u32,         // rows in this part of W
    cols: u32,
    row_bytes: u32,
    out_offset: u32,   // index in a token's (q | k | v) row of this part's first row
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    has_bias: u32,     // 1: add bias[o] to row o of (q | k | v)
}

@group(0) @binding(3) var<storage, read_write> Q: array<f32>;      // (batch, n_head * head_dim)
@group(0) @binding(4) var<storage, read_write> KC: array<Kv2>;     // (n_ctx, n_kv_head, head_dim / 2)
@group(0) @binding(5) var<storage, read_write> VC: array<Kv2>;     // (n_ctx, n_kv_head, head_dim / 2)
@group(0) @binding(6) var<storage, read> freqs: array<f32>;        // (n_rot / 2) each pair's frequency
@group(0) @binding(7) var<storage, read> bias: array<f32>;         // (q | k | v rows), or one unused value
@group(0) @binding(8) var<uniform> P: Params;

fn store_pair(token: u32, row: u32, a_raw: f32, b_raw: f32) {
    let o = P.out_offset + row;
    var a = a_raw;
    var b = b_raw;
    if (P.has_bias == 1u) {
        a += bias[o];
        b += bias[o + 1u];
    }
    let q_dim = P.n_head * P.head_dim;
    let kv_dim = P.n_kv_head * P.head_dim;
    if (o >= q_dim + kv_dim) {
        let c = cache_row(token) * kv_dim + o - q_dim - kv_dim;
        VC[c / 2u] = to_kv2(vec2<f32>(a, b));
        return;
    }
    var r = vec2<f32>(a, b);
    let i = (o % P.head_dim) / 2u;
    if (i < P.rope.n_rot / 2u) {
        let cs = rope_cos_sin(P.rope, token_turn(token, rope_axis(P.rope, i)), i, freqs[i]);
        r = vec2<f32>(a * cs.x - b * cs.y, a * cs.y + b * cs.x);
    }
    if (o < q_dim) {
        let q = token * q_dim + o;
        Q[q] = r.x;
        Q[q + 1u] = r.y;
    } else {
        let c = cache_row(token) * kv_dim + o - q_dim;
        KC[c / 2u] = to_kv2(r);
    }
}

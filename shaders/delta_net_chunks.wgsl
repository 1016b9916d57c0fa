// Gated DeltaNet's recurrence over a prompt's run in chunks of CHUNK tokens: the same layer as
// delta_net.wgsl (q and k L2-normed, each value head's state decayed, corrected along k by the delta
// rule, read by q, the read-out's gated norm), with the tokens of a chunk taken together in the
// chunked (WY) form rather than one after another.
//
// Within a chunk that starts from state S0, let G_c be the log decays summed through token c, and
// d_c = beta_c (v_c - exp(g_c) S_{c-1}^T k_c) the correction token c writes along k_c. Unrolled,
//   S_c = exp(G_c) S0 + sum_{s<=c} exp(G_c - G_s) k_s d_s^T,
// so the corrections solve a unit lower-triangular system and the read-outs and the chunk's last
// state follow from them:
//   d_c + sum_{s<c} beta_c exp(G_c - G_s) (k_c . k_s) d_s = beta_c (v_c - exp(G_c) S0^T k_c)
//   o_c = exp(G_c) S0^T q_c + sum_{s<=c} exp(G_c - G_s) (q_c . k_s) d_s
//   S_last = exp(G_last) S0 + sum_s exp(G_last - G_s) k_s d_s^T
// A workgroup per value head and a thread per value column j, as in the token form: column j of S,
// of every d and of every o is the thread's own, so the triangular solve runs in its registers. What
// the columns share (the chunk's normed q and k, their products k.k and q.k with the decays) is made
// once a chunk in workgroup memory: a handful of barriers a chunk where the token form takes about
// thirty a token. The sums of decays are taken over the tokens between, not as differences of
// running sums, so a strong decay loses no precision to cancellation.
//
// The source starts with CHUNK and DIM (the head dimension, the workgroup's threads);
// tuning chooses CHUNK among those the adapter's workgroup memory holds (`gpu::Recurrence`). Needs
// step.wgsl and delta_rule.wgsl.

@group(0) @binding(6) var<uniform> P: Params;

// The chunk's q (scaled by 1/sqrt(DIM)) and k, normed, [c * DIM + i]; once the columns have read
// them, q's tile holds the squared read-outs that the gated norm sums.
var<workgroup> q_tile: array<f32, CHUNK * DIM>;
var<workgroup> k_tile: array<f32, CHUNK * DIM>;
// [c * CHUNK + s]: beta_c exp(G_c - G_s) (k_c . k_s) for s < c, and exp(G_c - G_s) (q_c . k_s) for
// s <= c; zeros elsewhere.
var<workgroup> kk_decayed: array<f32, CHUNK * CHUNK>;
var<workgroup> qk_decayed: array<f32, CHUNK * CHUNK>;
var<workgroup> log_decays: array<f32, CHUNK>;   // g_c, 0 past the run's tokens
var<workgroup> betas: array<f32, CHUNK>;        // beta_c, 0 past the run's tokens
var<workgroup> since_start: array<f32, CHUNK>;  // G_c
var<workgroup> until_end: array<f32, CHUNK>;    // G_last - G_c
var<workgroup> inv_norms: array<f32, 2 * CHUNK>; // q's (with 1/sqrt(DIM)), then k's

// The log decays of tokens s + 1 ..= c.
fn decay_between(s: u32, c: u32) -> f32 {
    var g = 0.0;
    for (var u = s + 1u; u <= c; u++) {
        g += log_decays[u];
    }
    return g;
}

// The pipeline's WG, which the plan sets to DIM.
override WG: u32 = DIM;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) j: u32) {
    let h = wg.x;
    let kh = h % P.n_k_heads;
    let base = h * DIM * DIM + j;
    var column: array<f32, DIM>; // S[h][i][j] for i < DIM
    let fresh = step.tokens[0].pos == 0u; // a sequence starts from an empty state
    for (var i = 0u; i < DIM; i++) {
        column[i] = select(S[base + i * DIM], 0.0, fresh);
    }
    let w = norm[j];
    let v_at = 2u * P.n_k_heads * DIM + h * DIM + j;
    for (var first = 0u; first < step.n_tokens; first += CHUNK) {
        let count = min(CHUNK, step.n_tokens - first);
        for (var c = 0u; c < CHUNK; c++) {
            var q = 0.0;
            var k = 0.0;
            if (c < count) {
                let row = (first + c) * P.row_len;
                q = X[row + kh * DIM + j];
                k = X[row + (P.n_k_heads + kh) * DIM + j];
            }
            q_tile[c * DIM + j] = q;
            k_tile[c * DIM + j] = k;
        }
        if (j < CHUNK) {
            var g = 0.0;
            var beta = 0.0;
            if (j < count) {
                beta = write_strength(first + j, h);
                g = log_decay(first + j, h);
            }
            log_decays[j] = g;
            betas[j] = beta;
        }
        workgroupBarrier();
        // Thread c < 2 CHUNK norms one token's q or k; the last CHUNK threads sum the decays (DIM
        // is at least 4 CHUNK).
        if (j < 2u * CHUNK) {
            let c = j % CHUNK;
            let is_k = j >= CHUNK;
            var sum = 0.0;
            for (var i = 0u; i < DIM; i++) {
                let v = select(q_tile[c * DIM + i], k_tile[c * DIM + i], is_k);
                sum += v * v;
            }
            inv_norms[j] = inverseSqrt(sum + P.eps) * select(inverseSqrt(f32(DIM)), 1.0, is_k);
        } else if (j >= DIM - CHUNK) {
            let c = j - (DIM - CHUNK);
            since_start[c] = decay_between(0u, c) + log_decays[0];
            until_end[c] = decay_between(c, CHUNK - 1u);
        }
        workgroupBarrier();
        for (var c = 0u; c < CHUNK; c++) {
            q_tile[c * DIM + j] *= inv_norms[c];
            k_tile[c * DIM + j] *= inv_norms[CHUNK + c];
        }
        workgroupBarrier();
        for (var e = j; e < CHUNK * CHUNK; e += DIM) {
            let c = e / CHUNK;
            let s = e % CHUNK;
            var kk = 0.0;
            var qk = 0.0;
            if (s <= c) {
                for (var i = 0u; i < DIM; i++) {
                    let k = k_tile[s * DIM + i];
                    kk += k_tile[c * DIM + i] * k;
                    qk += q_tile[c * DIM + i] * k;
                }
            }
            let decay = exp(decay_between(s, c));
            kk_decayed[e] = select(0.0, betas[c] * decay * kk, s < c);
            qk_decayed[e] = select(0.0, decay * qk, s <= c);
        }
        workgroupBarrier();

        // Column j: S0^T k and S0^T q for every token of the chunk.
        var ks: array<f32, CHUNK>;
        var qs: array<f32, CHUNK>;
        for (var i = 0u; i < DIM; i++) {
            let s = column[i];
            for (var c = 0u; c < CHUNK; c++) {
                ks[c] += k_tile[c * DIM + i] * s;
                qs[c] += q_tile[c * DIM + i] * s;
            }
        }
        // The corrections by forward substitution, then the read-outs (into qs).
        var d: array<f32, CHUNK>;
        for (var c = 0u; c < CHUNK; c++) {
            var v = 0.0;
            if (c < count) {
                v = X[(first + c) * P.row_len + v_at];
            }
            var r = betas[c] * (v - exp(since_start[c]) * ks[c]);
            for (var s = 0u; s < c; s++) {
                r -= kk_decayed[c * CHUNK + s] * d[s];
            }
            d[c] = r;
        }
        for (var c = 0u; c < CHUNK; c++) {
            var o = exp(since_start[c]) * qs[c];
            for (var s = 0u; s <= c; s++) {
                o += qk_decayed[c * CHUNK + s] * d[s];
            }
            qs[c] = o;
        }
        // The state the chunk leaves. Tokens past the run have d = 0 and no decay.
        let kept = exp(since_start[CHUNK - 1u]);
        for (var c = 0u; c < CHUNK; c++) {
            d[c] *= exp(until_end[c]);
        }
        for (var i = 0u; i < DIM; i++) {
            var s = kept * column[i];
            for (var c = 0u; c < CHUNK; c++) {
                s += k_tile[c * DIM + i] * d[c];
            }
            column[i] = s;
        }

        // The gated norm of each token's read-out: its squares summed over the columns in q's tile.
        workgroupBarrier();
        for (var c = 0u; c < CHUNK; c++) {
            q_tile[c * DIM + j] = qs[c] * qs[c];
        }
        workgroupBarrier();
        for (var half = DIM / 2u; half > 0u; half >>= 1u) {
            if (j < half) {
                for (var c = 0u; c < CHUNK; c++) {
                    q_tile[c * DIM + j] += q_tile[c * DIM + j + half];
                }
            }
            workgroupBarrier();
        }
        for (var c = 0u; c < count; c++) {
            let t = first + c;
            let scale = inverseSqrt(q_tile[c * DIM] / f32(DIM) + P.eps);
            O[t * P.n_v_heads * DIM + h * DIM + j] = qs[c] * scale * w * silu_gate(t, h, j);
        }
        // Every thread has read the sums before the next chunk's q takes their place.
        workgroupBarrier();
    }
    for (var i = 0u; i < DIM; i++) {
        S[base + i * DIM] = column[i];
    }
}

// Attention of a long run's queries in tiles (flash attention): a workgroup takes one head of WG
// consecutive queries, a query a thread, and walks the keys its queries see in tiles of BK keys
// and values held in workgroup memory; each thread keeps its query, its running max and sum and its
// output row in registers (online softmax), so a key and a value read from memory serve WG queries,
// and a tile costs two barriers where attention.wgsl's blocks cost ten for four queries. A query
// sees its own sequence's rows (step.wgsl): up to its position (causal), or its sequence's whole
// run. Heads of at most MAX_HD dimensions, a multiple of 4; q head h reads kv head
// h / (n_head / n_kv_head). Needs step.wgsl.

struct Params {
    n_head: u32,
    n_kv_head: u32,
    head_dim: u32,
    scale: f32,
    causal: u32, // 0: every row of the query's sequence in the run
}

@group(0) @binding(0) var<storage, read> Q: array<vec4<f32>>;       // (batch, n_head, head_dim / 4)
@group(0) @binding(1) var<storage, read> KC: array<vec4<f32>>;      // (n_ctx, n_kv_head, head_dim / 4)
@group(0) @binding(2) var<storage, read> VC: array<vec4<f32>>;      // (n_ctx, n_kv_head, head_dim / 4)
@group(0) @binding(3) var<storage, read_write> O: array<vec4<f32>>; // (batch, n_head, head_dim / 4)
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> P: Params;

override WG: u32 = 64u;
const BK: u32 = 16u;     // keys a tile
const MAX_HD4: u32 = 32u; // vec4s of the widest head (128 dimensions)

var<workgroup> k_tile: array<vec4<f32>, BK * MAX_HD4>;
var<workgroup> v_tile: array<vec4<f32>, BK * MAX_HD4>;
var<workgroup> bounds: array<atomic<u32>, 2>; // the workgroup's queries' keys: [first, end)
var<workgroup> first_key: u32;
var<workgroup> end_key: u32;

// The cache rows token t's query sees: [first, end).
fn key_range(t: u32) -> vec2<u32> {
    let token = step.tokens[t];
    if (P.causal != 0u) {
        return vec2<u32>(token.base, token.base + token.pos + 1u);
    }
    return vec2<u32>(token.base, token.end);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let t0 = wg.y * WG;
    if (t0 >= step.n_tokens) {
        return;
    }
    let hd4 = P.head_dim / 4u;
    let kv = h / (P.n_head / P.n_kv_head);
    let t = t0 + lid;
    let mine = t < step.n_tokens;
    // Threads past the run attend as the run's last query and store nothing.
    let range = key_range(min(t, step.n_tokens - 1u));
    if (lid == 0u) {
        atomicStore(&bounds[0], 0xffffffffu);
        atomicStore(&bounds[1], 0u);
    }
    workgroupBarrier();
    atomicMin(&bounds[0], range.x);
    atomicMax(&bounds[1], range.y);
    var q: array<vec4<f32>, MAX_HD4>;
    var acc: array<vec4<f32>, MAX_HD4>;
    let q_row = (min(t, step.n_tokens - 1u) * P.n_head + h) * hd4;
    for (var i = 0u; i < hd4; i++) {
        q[i] = Q[q_row + i] * P.scale;
    }
    var m = -3.0e38;
    var l = 0.0;
    workgroupBarrier();
    if (lid == 0u) {
        first_key = atomicLoad(&bounds[0]);
        end_key = atomicLoad(&bounds[1]);
    }
    let first = workgroupUniformLoad(&first_key);
    let end = workgroupUniformLoad(&end_key);
    for (var start = first; start < end; start += BK) {
        let count = min(BK, end - start);
        for (var i = lid; i < count * hd4; i += WG) {
            let key = i / hd4;
            let at = ((start + key) * P.n_kv_head + kv) * hd4 + i % hd4;
            k_tile[key * MAX_HD4 + i % hd4] = KC[at];
            v_tile[key * MAX_HD4 + i % hd4] = VC[at];
        }
        workgroupBarrier();
        // The tile's scores, its max, then one rescale of what came before.
        var s: array<f32, BK>;
        var tile_max = -3.0e38;
        for (var j = 0u; j < count; j++) {
            let p = start + j;
            var d = vec4<f32>(0.0);
            for (var i = 0u; i < hd4; i++) {
                d += q[i] * k_tile[j * MAX_HD4 + i];
            }
            let score = d.x + d.y + d.z + d.w;
            let seen = p >= range.x && p < range.y;
            s[j] = select(-3.0e38, score, seen);
            tile_max = max(tile_max, s[j]);
        }
        let m_new = max(m, tile_max);
        let rescale = exp(m - m_new);
        l *= rescale;
        for (var i = 0u; i < hd4; i++) {
            acc[i] *= rescale;
        }
        for (var j = 0u; j < count; j++) {
            let p = start + j;
            if (p >= range.x && p < range.y) {
                let e = exp(s[j] - m_new);
                l += e;
                for (var i = 0u; i < hd4; i++) {
                    acc[i] += e * v_tile[j * MAX_HD4 + i];
                }
            }
        }
        m = m_new;
        workgroupBarrier(); // the tile is read before the next one is loaded
    }
    if (mine) {
        let out = (t * P.n_head + h) * hd4;
        let norm = select(0.0, 1.0 / l, l > 0.0);
        for (var i = 0u; i < hd4; i++) {
            O[out + i] = acc[i] * norm;
        }
    }
}

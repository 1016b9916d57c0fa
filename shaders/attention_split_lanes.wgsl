// A step's attention from token wg.y on over split wg.z of its keys (flash-decoding), shaped for
// GPUs: the form of attention_split.wgsl whose threads read a key's neighbouring words rather than
// a key each. A workgroup takes a group of up to ROWS query heads that read one kv head
// (head_group.wgsl); its threads are CI columns of keys by DS neighbouring lanes of a subgroup,
// lane d holding vec4s d, d + DS, ... (HDS of them) of each of the group's queries and outputs. A
// column walks every CI-th key of the split, KR of them at a time (read before any is scored, so
// that KR keys' reads are in flight at once): its DS lanes read each key's and value's slices side
// by side (a read that serves the group's heads), each head's score is the lanes' parts summed by
// subgroup shuffles, and each head keeps a running max, sum and output slice (online softmax), no
// barrier on the way. At the end the columns' states are merged through workgroup memory, and the
// split's state goes to `parts` as attention_split.wgsl leaves it, for attention_merge.wgsl (which
// applies sinks). Consecutive tokens of one sequence (a speculative check's) are taken up to TQ a
// workgroup, by the workgroup of the first of them: their splits are of the keys the last sees,
// each key and value read serves every token's queries (each weighing the keys it sees), and the
// other tokens' workgroups leave at once. The pipeline defines HD4 (vec4s a head), DS, CI, KR, ROWS
// and TQ (1 in a plan of one token). Needs subgroups at least DS wide, kv_f32.wgsl or kv_f16.wgsl,
// step.wgsl, key_range.wgsl, check_tokens.wgsl, split_params.wgsl, head_group.wgsl and
// lanes_sum.wgsl.

@group(0) @binding(0) var<storage, read> Q: array<vec4<f32>>;       // (tokens, n_head, head_dim / 4)
@group(0) @binding(1) var<storage, read> KC: array<Kv4>;            // (n_ctx, n_kv_head, head_dim / 4)
@group(0) @binding(2) var<storage, read> VC: array<Kv4>;            // (n_ctx, n_kv_head, head_dim / 4)
@group(0) @binding(3) var<storage, read_write> parts: array<f32>;   // (tokens, n_head, n_split, head_dim + 2)
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<uniform> P: Params;

const HDS: u32 = HD4 / DS;     // vec4s of a head a lane holds
const THREADS: u32 = DS * CI;  // the WG the pipeline is made with
const ROUND: u32 = CI * KR;    // keys the workgroup reads at a time

// The merge of the columns' states, one head at a time: each thread's max, sum and output slice.
var<workgroup> merge_m: array<f32, THREADS>;
var<workgroup> merge_l: array<f32, THREADS>;
var<workgroup> merge_o: array<vec4<f32>, THREADS * HDS>;

override WG: u32 = 128u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let per_kv = P.n_head / P.n_kv_head;
    let group = head_group(wg.x, per_kv);
    let kv = group.x / per_kv;
    let d = lid % DS;
    let col = lid / DS;
    let split = wg.z;
    let taken = tokens_taken(wg.y);
    if (taken == 0u) {
        return;
    }
    // Token u of those taken is wg.y + u; each sees its own keys, the later ones more. Whole rounds
    // a split: every column of a split but the last takes as many keys.
    let sees = taken_keys(wg.y, taken, P.window);
    let keys = taken_split(sees, taken, split, P.n_split, ROUND);
    // Rows past the group's heads repeat its last head, tokens past those taken the last taken;
    // neither is stored.
    var q: array<array<array<vec4<f32>, HDS>, ROWS>, TQ>;
    var o: array<array<array<vec4<f32>, HDS>, ROWS>, TQ>;
    var m: array<array<f32, ROWS>, TQ>;
    var l: array<array<f32, ROWS>, TQ>;
    for (var u = 0u; u < TQ; u++) {
        let first_head = (wg.y + min(u, taken - 1u)) * P.n_head + group.x;
        for (var g = 0u; g < ROWS; g++) {
            let head = first_head + min(g, group.y - 1u);
            for (var i = 0u; i < HDS; i++) {
                q[u][g][i] = Q[head * HD4 + i * DS + d] * P.scale;
                o[u][g][i] = vec4<f32>(0.0);
            }
            m[u][g] = -3.0e38;
            l[u][g] = 0.0;
        }
    }
    let row = P.n_kv_head * HD4; // vec4s of a cache row
    // The rounds are the workgroup's, so every lane shuffles in each; a column past the split's end
    // reads its last key again and weighs it 0, as each token does the keys past its own.
    for (var start = keys.x; start < keys.y; start += ROUND) {
        var k: array<array<vec4<f32>, HDS>, KR>;
        var v: array<array<vec4<f32>, HDS>, KR>;
        var at_key: array<u32, KR>;
        for (var j = 0u; j < KR; j++) {
            let p = start + j * CI + col;
            at_key[j] = p;
            let at = min(p, keys.y - 1u) * row + kv * HD4 + d;
            for (var i = 0u; i < HDS; i++) {
                k[j][i] = kv4(KC[at + i * DS]);
                v[j][i] = kv4(VC[at + i * DS]);
            }
        }
        for (var u = 0u; u < TQ; u++) {
            if (u >= taken) {
                continue; // a constant count of turns: the arrays stay in registers
            }
            for (var j = 0u; j < KR; j++) {
                let p = at_key[j];
                let seen = p < keys.y && sees[u].x <= p && p < sees[u].y;
                for (var g = 0u; g < ROWS; g++) {
                    var part = vec4<f32>(0.0);
                    for (var i = 0u; i < HDS; i++) {
                        part += q[u][g][i] * k[j][i];
                    }
                    var score = lanes_sum(part);
                    if (P.softcap > 0.0) {
                        // tanh of a clamped argument: some backends compute tanh by exp, which overflows.
                        score = P.softcap * tanh(clamp(score / P.softcap, -20.0, 20.0));
                    }
                    // Where no key was seen yet, m is -3e38 and rescales nothing (o and l are 0).
                    let m_new = select(m[u][g], max(m[u][g], score), seen);
                    let rescale = exp(m[u][g] - m_new);
                    let e = select(0.0, exp(score - m_new), seen);
                    l[u][g] = l[u][g] * rescale + e;
                    for (var i = 0u; i < HDS; i++) {
                        o[u][g][i] = o[u][g][i] * rescale + e * v[j][i];
                    }
                    m[u][g] = m_new;
                }
            }
        }
    }
    // Each head's CI column states merged, token by token: column c's lane d is thread c * DS + d.
    // A split with no keys of a token's leaves it l = 0, which the merge kernel skips.
    for (var u = 0u; u < TQ; u++) {
        if (u >= taken) {
            continue;
        }
        let first_head = (wg.y + u) * P.n_head + group.x;
        for (var g = 0u; g < ROWS; g++) {
            workgroupBarrier(); // the head before read
            merge_m[lid] = m[u][g];
            workgroupBarrier();
            var m_all = -3.0e38;
            for (var c = 0u; c < CI; c++) {
                m_all = max(m_all, merge_m[c * DS + d]);
            }
            let rescale = exp(m[u][g] - m_all);
            merge_l[lid] = l[u][g] * rescale;
            for (var i = 0u; i < HDS; i++) {
                merge_o[lid * HDS + i] = o[u][g][i] * rescale;
            }
            workgroupBarrier();
            if (col == 0u && g < group.y) {
                var sum = 0.0;
                var out: array<vec4<f32>, HDS>;
                for (var c = 0u; c < CI; c++) {
                    let other = c * DS + d;
                    sum += merge_l[other];
                    for (var i = 0u; i < HDS; i++) {
                        out[i] += merge_o[other * HDS + i];
                    }
                }
                let at = ((first_head + g) * P.n_split + split) * (P.head_dim + 2u);
                for (var i = 0u; i < HDS; i++) {
                    let dim = (i * DS + d) * 4u;
                    parts[at + dim] = out[i].x;
                    parts[at + dim + 1u] = out[i].y;
                    parts[at + dim + 2u] = out[i].z;
                    parts[at + dim + 3u] = out[i].w;
                }
                if (d == 0u) {
                    parts[at + P.head_dim] = m_all;
                    parts[at + P.head_dim + 1u] = sum;
                }
            }
        }
    }
}

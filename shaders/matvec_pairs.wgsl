// W x for kernels that combine rows in pairs (2p, 2p+1): gate and up rows interleaved for SwiGLU, the
// two dimensions RoPE rotates together. As matvec.wgsl otherwise: a workgroup of WG threads takes
// WG / TPR pairs, and the TPR threads of a pair split its row as the row_dot file says, reading each x
// once for both rows. One layer of workgroups (z) per token of the run. The store file declares
// Params (with rows, cols and row_bytes) and the outputs, and defines store_pair. Needs step.wgsl,
// a row_dot file and a row_sum file.

@group(0) @binding(0) var<storage, read> W: array<u32>;            // (rows, row_bytes / 4)
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;      // (batch, cols / 4)
@group(0) @binding(2) var<storage, read> step: Step;

override WG: u32 = 64u;
override TPR: u32 = 64u; // threads per pair, a power of two dividing WG

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let token = wg.z;
    if (token >= step.n_tokens) {
        return;
    }
    let pair = (wg.x + wg.y * nwg.x) * (WG / TPR) + t / TPR;
    let in_range = pair < P.rows / 2u;
    var acc = vec2<f32>(0.0);
    if (in_range) {
        acc = pair_dot(2u * pair * P.row_bytes, P.row_bytes, token * (P.cols / 4u), P.cols, t % TPR);
    }
    let sum = pair_sum(t, acc);
    if (t % TPR == 0u && in_range) {
        store_pair(token, 2u * pair, sum.x, sum.y);
    }
}

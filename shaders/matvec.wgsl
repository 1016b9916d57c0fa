// y[row] = dot(W[row], x) (+ y[row] when accumulating: the residual add), W packed.
// A workgroup of WG threads takes WG / TPR rows; the TPR threads of a row stride over its 32-weight chunks
// and reduce in shared memory.

struct Params {
    rows: u32,       // rows in this part of W
    cols: u32,       // weights per row (a multiple of 32)
    row_bytes: u32,  // bytes of one packed row
    out_offset: u32, // index in y of this part's first row
    accumulate: u32, // 1: y += W x
}

@group(0) @binding(0) var<storage, read> W: array<u32>;            // (rows, row_bytes / 4)
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;      // (cols / 4)
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;      // (out_offset + rows)
@group(0) @binding(3) var<uniform> P: Params;

override WG: u32 = 64u;
override TPR: u32 = 64u; // threads per row, a power of two dividing WG
const SUBS: u32 = BLOCK_LEN / 32u;
var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let lane = t % TPR;
    let row = (wg.x + wg.y * nwg.x) * (WG / TPR) + t / TPR;
    var acc = 0.0;
    if (row < P.rows) {
        let base = row * P.row_bytes;
        for (var c = lane; c < P.cols / 32u; c += TPR) {
            let w = dequant32(base + (c / SUBS) * BLOCK_BYTES, c % SUBS);
            for (var i = 0u; i < 8u; i++) {
                acc += dot(w[i], X[c * 8u + i]);
            }
        }
    }
    partial[t] = acc;
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            partial[t] += partial[t + s];
        }
        workgroupBarrier();
    }
    if (lane == 0u && row < P.rows) {
        let o = P.out_offset + row;
        Y[o] = select(0.0, Y[o], P.accumulate == 1u) + partial[t];
    }
}

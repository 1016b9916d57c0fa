// out = the token's row of a packed embedding table, dequantized. Dispatched once per part of the table;
// only the part holding the token writes.

struct Params {
    rows: u32,      // rows in this part of the table
    cols: u32,      // weights per row (a multiple of 32)
    row_bytes: u32,
    first_row: u32, // the table row this part starts at
}

struct Step {
    token: u32,
    pos: u32,
}

@group(0) @binding(0) var<storage, read> W: array<u32>;            // (rows, row_bytes / 4)
@group(0) @binding(1) var<storage, read> step: Step;
@group(0) @binding(2) var<storage, read_write> Y: array<vec4<f32>>; // (cols / 4)
@group(0) @binding(3) var<uniform> P: Params;

override WG: u32 = 64u;
const SUBS: u32 = BLOCK_LEN / 32u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    if (step.token < P.first_row || step.token >= P.first_row + P.rows || c >= P.cols / 32u) {
        return;
    }
    let base = (step.token - P.first_row) * P.row_bytes;
    let w = dequant32(base + (c / SUBS) * BLOCK_BYTES, c % SUBS);
    for (var i = 0u; i < 8u; i++) {
        Y[c * 8u + i] = w[i];
    }
}

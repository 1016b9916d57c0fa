// Row t of out = the row of a packed embedding table for the run's token t, dequantized and scaled. Dispatched
// once per part of the table; only the part holding the token writes. Needs step.wgsl.

struct Params {
    rows: u32,      // rows in this part of the table
    cols: u32,      // weights per row (a multiple of 32)
    row_bytes: u32,
    first_row: u32, // the table row this part starts at
    scale: f32,     // Gemma's sqrt(n_embd); 1 elsewhere
    past_table: u32, // the row ids past the whole table read; 0xffffffff: none, their rows left alone
    table_rows: u32, // rows in the whole table
}

@group(0) @binding(0) var<storage, read> W: array<u32>;            // (rows, row_bytes / 4)
@group(0) @binding(1) var<storage, read> step: Step;
@group(0) @binding(2) var<storage, read_write> Y: array<vec4<f32>>; // (batch, cols / 4)
@group(0) @binding(3) var<uniform> P: Params;

override WG: u32 = 64u;
const SUBS: u32 = BLOCK_LEN / 32u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let t = gid.y;
    if (t >= step.n_tokens || c >= P.cols / 32u) {
        return;
    }
    var token = step.tokens[t].id;
    if (token >= P.table_rows && P.past_table != 0xffffffffu) {
        token = P.past_table;
    }
    if (token < P.first_row || token >= P.first_row + P.rows) {
        return;
    }
    let base = (token - P.first_row) * P.row_bytes;
    let w = dequant32(base + (c / SUBS) * BLOCK_BYTES, c % SUBS);
    let y = t * (P.cols / 4u) + c * 8u;
    for (var i = 0u; i < 8u; i++) {
        Y[y + i] = w[i] * P.scale;
    }
}

// X W_e^T for the experts a run's tokens were routed to (mixture-of-experts over a prompt's chunk),
// grouped by expert: each tile of an expert's weights is dequantized once for up to TN of the items
// routed to it (matmul_tile.wgsl), where reading experts by index would do it once per item. An item is
// one (token, slot) pair, token * n_used + slot; moe_group.wgsl lists each expert's items. Workgroup
// (row tile, item tile, expert). Y[item * rows + r] = dot(W[e * rows + r], x), x being the token's row
// of X (gate, up: every slot reads the normed input) or the item's own (down: each slot's hidden
// state). A tensor split into parts is dispatched once per part; each part computes its rows. Needs
// matmul_tile.wgsl.

struct Params {
    rows: u32,        // rows of one expert
    cols: u32,        // weights per row (a multiple of 32)
    row_bytes: u32,
    first_row: u32,   // this part's first row in the stacked tensor
    part_rows: u32,
    n_expert: u32,
    n_used: u32,      // experts chosen per token
    max_items: u32,   // the length of each expert's list
    x_per_item: u32,  // 1: X has a row per item; 0: a row per token
}

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> groups: array<u32>;     // (n_expert) counts, (n_expert, max_items) items
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;    // (items, rows)
@group(0) @binding(4) var<uniform> P: Params;

override WG: u32 = 64u; // the tile's threads (matmul_tile.wgsl)
var<workgroup> items: array<u32, TN>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let e = wg.z;
    let item0 = wg.y * TN;
    let count = groups[e];
    if (item0 >= count) {
        return;
    }
    // The tile's rows, in the stacked tensor: inside expert e and inside this part.
    let row0 = wg.x * TM;
    let g0 = e * P.rows + row0;
    let start = max(g0, P.first_row);
    let end = min(min(g0 + TM, (e + 1u) * P.rows), P.first_row + P.part_rows);
    if (start >= end) {
        return;
    }
    let n = min(TN, count - item0);
    if (t < n) {
        let item = groups[P.n_expert + e * P.max_items + item0 + t];
        items[t] = item;
        x_rows[t] = select(item / P.n_used, item, P.x_per_item == 1u) * (P.cols / 4u);
    }
    workgroupBarrier();
    let lo = start - g0;
    let hi = end - g0;
    let acc = multiply_tile(t, lo, hi, start - P.first_row, n);

    let my_rows = tile_rows(t);
    let my_tokens = tile_tokens(t);
    for (var r = 0u; r < RB; r++) {
        let j = my_rows + r;
        for (var k = 0u; k < 4u; k++) {
            let slot = my_tokens + k;
            if (j >= lo && j < hi && slot < n) {
                Y[items[slot] * P.rows + row0 + j] = acc[r][k];
            }
        }
    }
}

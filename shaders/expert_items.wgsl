// What the products over the experts' lists share (matmul_id.wgsl, matmul_id_coop.wgsl): X W_e^T for
// the experts a run's tokens were routed to (mixture-of-experts over a prompt's chunk), grouped by
// expert, so that each tile of an expert's weights is dequantized once for up to TN of the items
// routed to it, where reading experts by index would do it once per item. An item is one (token, slot)
// pair, token * n_used + slot; moe_group.wgsl lists each expert's items. Workgroup (row tile, item
// tile, expert). Y[item * rows + r] = dot(W[e * rows + r], x), x being the token's row of X (gate, up:
// every slot reads the normed input) or the item's own (down: each slot's hidden state). A tensor
// split into parts is dispatched once per part; each part computes its rows.

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

var<workgroup> items: array<u32, TN>;

// Workgroup wg's share of expert wg.z: the tile's first row in the expert, row0; the n items it takes
// from the expert's list from item0 (none: nothing to do); and its rows, inside the expert and inside
// this part: tile row j in [lo, hi) is the bound W's row first + j - lo.
struct ExpertTile {
    row0: u32,
    item0: u32,
    n: u32,
    lo: u32,
    hi: u32,
    first: u32,
}

fn expert_tile(wg: vec3<u32>) -> ExpertTile {
    let e = wg.z;
    var tile = ExpertTile(wg.x * TM, wg.y * TN, 0u, 0u, 0u, 0u);
    let count = groups[e];
    let g0 = e * P.rows + tile.row0;
    let start = max(g0, P.first_row);
    let end = min(min(g0 + TM, (e + 1u) * P.rows), P.first_row + P.part_rows);
    if (tile.item0 < count && start < end) {
        tile.n = min(TN, count - tile.item0);
        tile.lo = start - g0;
        tile.hi = end - g0;
        tile.first = start - P.first_row;
    }
    return tile;
}

// The tile's items, and where their rows of X start (x_rows, matmul_tile.wgsl's or
// matmul_coop_tile.wgsl's).
fn list_items(t: u32, e: u32, tile: ExpertTile) {
    for (var k = t; k < tile.n; k += WG) {
        let item = groups[P.n_expert + e * P.max_items + tile.item0 + k];
        items[k] = item;
        x_rows[k] = select(item / P.n_used, item, P.x_per_item == 1u) * (P.cols / 4u);
    }
}

// Tile row j's value for the tile's item `slot`, where the row is the tile's and the item is one.
fn store_item(tile: ExpertTile, slot: u32, j: u32, v: f32) {
    if (j >= tile.lo && j < tile.hi && slot < tile.n) {
        Y[items[slot] * P.rows + tile.row0 + j] = v;
    }
}

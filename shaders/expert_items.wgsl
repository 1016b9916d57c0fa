// What the products over the experts' lists share (matmul_id.wgsl, matmul_id_coop.wgsl): X W_e^T for
// the experts a run's tokens were routed to (mixture-of-experts over a prompt's chunk), grouped by
// expert, so that each tile of an expert's weights is dequantized once for up to TN of the items
// routed to it, where reading experts by index would do it once per item. An item is one (token, slot)
// pair, token * n_used + slot; moe_group.wgsl lists each expert's items. Workgroup (row tile, item
// tile, expert). Y[item * rows + r] = dot(W[e * rows + r], x), x being the token's row of X (gate, up:
// every slot reads the normed input) or the item's own (down: each slot's hidden state). A tensor
// split into parts is dispatched once per part; each part computes its rows. The tile's token n is
// its item n (tile.wgsl's x_start and store_sums are defined here). Needs tile.wgsl.

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
var<workgroup> x_rows: array<u32, TN>; // the vec4 where each item's row of X starts

// Workgroup wg's share of expert wg.z: the tile's first row in the expert, row0; the items it takes
// from the expert's list from token0 (none: nothing to do); and its rows, inside the expert and
// inside this part.
fn expert_tile(wg: vec3<u32>) -> Tile {
    let e = wg.z;
    var tile = Tile(wg.x * TM, wg.y * TN, 0u, 0u, 0u, 0u);
    let count = groups[e];
    let g0 = e * P.rows + tile.row0;
    let start = max(g0, P.first_row);
    let end = min(min(g0 + TM, (e + 1u) * P.rows), P.first_row + P.part_rows);
    if (tile.token0 < count && start < end) {
        tile.tokens = min(TN, count - tile.token0);
        tile.lo = start - g0;
        tile.hi = end - g0;
        tile.first = start - P.first_row;
    }
    return tile;
}

// The tile's items, and where their rows of X start. A barrier must follow before the product.
fn list_items(t: u32, e: u32, tile: Tile) {
    for (var k = t; k < tile.tokens; k += WG) {
        let item = groups[P.n_expert + e * P.max_items + tile.token0 + k];
        items[k] = item;
        x_rows[k] = select(item / P.n_used, item, P.x_per_item == 1u) * (P.cols / 4u);
    }
}

fn x_start(tile: Tile, slot: u32) -> u32 {
    return x_rows[slot];
}

// Tile rows j and j + 1 for the tile's item `slot`, where the rows are the tile's.
fn store_sums(tile: Tile, slot: u32, j: u32, a: f32, b: f32) {
    let y = items[slot] * P.rows + tile.row0 + j;
    if (j >= tile.lo && j < tile.hi) {
        Y[y] = a;
    }
    if (j + 1u >= tile.lo && j + 1u < tile.hi) {
        Y[y + 1u] = b;
    }
}

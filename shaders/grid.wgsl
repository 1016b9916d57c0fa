// An image's grid of patches, written before each image: its patches are the run's tokens, row by
// row (`cols` a row), so token t is at column t % cols of row t / cols. The kernels that read it bind
// it as `grid`.

struct Grid {
    cols: u32,
    rows: u32,
}

// Token t's (column, row).
fn grid_place(cols: u32, t: u32) -> vec2<u32> {
    return vec2<u32>(t % cols, t / cols);
}

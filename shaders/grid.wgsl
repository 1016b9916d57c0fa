// An image's grid of patches, written before each image: its patches are the run's tokens, row by
// row (`cols` a row), or where `merge` is more than 1 in merge x merge squares, the squares row by
// row and each square's patches row by row (Qwen-VL's order, whose squares become tokens). The
// kernels that read it bind it as `grid`.

struct Grid {
    cols: u32,
    rows: u32,
    merge: u32,
}

// Token t's (column, row).
fn grid_place(g: Grid, t: u32) -> vec2<u32> {
    let area = g.merge * g.merge;
    let square = t / area;
    let within = t % area;
    let squares_a_row = g.cols / g.merge;
    let corner = vec2<u32>(square % squares_a_row, square / squares_a_row) * g.merge;
    return corner + vec2<u32>(within % g.merge, within / g.merge);
}

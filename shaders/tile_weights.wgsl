// What the attention kernels on the matrix cores share (attention_coop.wgsl, mla_attention_coop.wgsl):
// a row's softmax weights for a tile of keys, in f16 for the matrices that multiply them. The outputs
// are held in matrix registers, which can only be scaled whole, so they are not rescaled at every new
// max (online softmax's usual step): each row's weights are taken against a reference max that moves
// only when a tile's max passes it by more than TAU (a weight then at most e^TAU, which f16 holds),
// and only then does the kernel pass its outputs through workgroup memory to rescale their rows
// (rescale_any says whether any row moved). A row's first keys set its reference without a rescale
// (its output is still zero). The kernel declares BK, `scores` (f32, rows SS apart), `weights` (f16,
// rows PS apart), `row_factor` (f32) and `rescale_any` (u32) in workgroup memory.

// A reference max moves when a tile's max passes it by more than this: weights stay under e^8.
const TAU: f32 = 8.0;

// Row `row`'s weights for the tile of keys from `start` into `weights`, from its scores in `scores`
// (those outside `range` left out), against its reference max `m`, their sum added to `l`; its
// outputs' factor into row_factor (1 where the reference stayed).
fn weigh_tile(row: u32, start: u32, range: vec2<u32>, m: ptr<function, f32>, l: ptr<function, f32>) {
    var tile_max = -3.0e38;
    for (var j = 0u; j < BK; j++) {
        let key = start + j;
        let score = select(-3.0e38, scores[row * SS + j], key >= range.x && key < range.y);
        scores[row * SS + j] = score;
        tile_max = max(tile_max, score);
    }
    var factor = 1.0;
    if (*m == -3.0e38) {
        *m = tile_max;
    } else if (tile_max > *m + TAU) {
        factor = exp(*m - tile_max);
        *l *= factor;
        *m = tile_max;
        rescale_any = 1u; // every writer writes the same value
    }
    row_factor[row] = factor;
    for (var j = 0u; j < BK; j++) {
        let key = start + j;
        // Where no key was seen yet, m is -3e38 too: the range decides, not exp.
        let seen = key >= range.x && key < range.y;
        let w = f16(select(0.0, exp(scores[row * SS + j] - *m), seen));
        weights[row * PS + j] = w;
        *l += f32(w);
    }
}

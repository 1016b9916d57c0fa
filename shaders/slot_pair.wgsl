// What a slot of a row's TPR threads takes of a run of several tokens in shaders/matvec_pairs.wgsl:
// one pair of rows, split as the row_dot file says (slot_eight_rows.wgsl takes four).

// The products of pair `slot` with the four tokens' x from vec4s x0, summed over the slot's threads
// and stored.
fn slot_four_tokens(token0: u32, x0: vec4<u32>, slot: u32, t: u32) {
    var acc = array<vec4<f32>, 2>(vec4<f32>(0.0), vec4<f32>(0.0));
    if (slot < (P.rows + 1u) / 2u) {
        acc = pair_dot4(2u * slot * P.row_bytes, P.row_bytes, x0, P.cols, t % TPR);
    }
    let sums = pair_sum4(t, acc);
    store_four(token0, slot, sums, x_scale4(t, P.cols), t);
}

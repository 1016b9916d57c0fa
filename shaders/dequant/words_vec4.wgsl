// How the dequant files read a weight word where W holds vec4s of words, so that a thread's part of a
// block can come in one 16-byte load (`words4`), which a GPU serves in one instruction where four
// words take four (the wide parts: dequant/*_wide.wgsl). Other words, the blocks' heads, are read
// one at a time as before.
alias WeightWord = vec4<u32>;

fn word(i: u32) -> u32 {
    return W[i >> 2u][i & 3u];
}

// Words i..i + 4, i a multiple of 4.
fn words4(i: u32) -> vec4<u32> {
    return W[i >> 2u];
}

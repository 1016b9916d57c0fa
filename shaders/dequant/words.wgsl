// How the dequant files read a weight word: here W holds words one by one.
alias WeightWord = u32;

fn word(i: u32) -> u32 {
    return W[i];
}

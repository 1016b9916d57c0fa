// Where a regrouped block's parts lie (src/gpu/regroup.rs). The 32-weight types' blocks and Q6_K's
// come in groups of GROUP_BLOCKS: the group's heads first (HEAD_BYTES each: the f16 scale, and Q4_1's
// and Q5_1's min and Q5_0's and Q5_1's fifth bits; MXFP4's exponent byte), then its blocks' bodies
// (the quants), which lie on 16-byte bounds. A block keeps the address `b` of the file's layout; the
// pipeline declares HEAD_BYTES and GROUP_BLOCKS from the type's regrouping
// (`Regroup::shader_constants`).

// The block's place in its group, which starts that many blocks before it.
fn place_in_group(b: u32) -> u32 {
    return (b / BLOCK_BYTES) % GROUP_BLOCKS;
}

// Its head: in the group's heads, in the block's place.
fn head_at(b: u32) -> u32 {
    return b - place_in_group(b) * (BLOCK_BYTES - HEAD_BYTES);
}

// Its body: after the group's heads and the bodies of the blocks before it in the group.
fn body_at(b: u32) -> u32 {
    return b - place_in_group(b) * HEAD_BYTES + GROUP_BLOCKS * HEAD_BYTES;
}

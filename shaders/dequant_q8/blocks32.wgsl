// What the 32-weight types share on 8-bit x (row_dot_q8.wgsl): each type's block_part_int8 is part p
// of 4 of a block (row_dot_parts.wgsl's split), its dot product with x quantized to 8 bits (block
// x_blk of it) by integer dot products. Part p reads x words p and p + 4 (x values 4p..4p + 4 and
// 16 + 4p..16 + 4p + 4), placed side by side.

fn x8_place(i: u32) -> u32 {
    return (i % 4u) * 2u + i / 4u;
}

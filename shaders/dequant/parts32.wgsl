// A block of 32 weights (or a float type's run of 32) shared by 4 threads in row_dot_parts.wgsl: part
// p (0..3) takes weights 4p..4p + 4 and 16 + 4p..16 + 4p + 4, the vec4s of x part_x4 gives; the
// type's parts file reads them (block_part).
const PARTS: u32 = 4u;
const PART_X4: u32 = 2u;

fn part_x4(part: u32, j: u32) -> u32 {
    return part + 4u * j;
}

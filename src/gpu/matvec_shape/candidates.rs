//! The kernel shapes `Engine::tune` times for a matvec shape (`MatvecShape::candidates`): a prompt's
//! tiles, a decode step's splits of rows over threads, and the forms for adapters that run
//! workgroups on a CPU.

use super::super::kernels::{block_parts, has_block_form};
use super::super::matvec_kernel::{MatvecKernel, Offers, Split};
use super::super::tiles::{CoopTile, ROWS_TILE_WORKGROUP};
use super::super::{Kernel, XNorm};
use super::MatvecShape;

impl MatvecShape {
    /// The candidates `Engine::tune` times, the default first. A matmul's are its tiles
    /// (`tile_candidates`); a decode step's products split their rows over threads
    /// (`split_candidates`), and where workgroups run on a CPU also take the larger slots by wide
    /// parts (`wide_slot_candidates`); a step's pair product of several tokens also tries the
    /// 64-thread tile and the tile in registers (`takes_tiles`).
    pub fn candidates(&self, offers: Offers) -> Vec<MatvecKernel> {
        if self.is_tiled() {
            return self.tile_candidates(offers);
        }
        let mut c = self.split_candidates(offers);
        c.extend(self.wide_slot_candidates(offers));
        if self.takes_tiles() {
            c.extend([64, ROWS_TILE_WORKGROUP].map(MatvecKernel::tile));
        }
        c
    }

    /// A matmul's tiles (`matmul_tile`), which not every adapter `fits`, the tile in registers
    /// among them; where the adapter has matrix cores that plans may use (`Gpu::matrix_cores`), the
    /// tiles on them (`CoopTile`: the experts' product the square ones, the grouped product none);
    /// and where plans may hold tiles in f16 (`Offers::f16_tiles`), the tiles in workgroup memory
    /// so.
    fn tile_candidates(&self, offers: Offers) -> Vec<MatvecKernel> {
        let tile = MatvecKernel::tile;
        // The tile in registers is for adapters that run workgroups on a CPU.
        let mut tiles = vec![
            self.default_kernel(),
            tile(128),
            tile(256),
            tile(ROWS_TILE_WORKGROUP),
        ];
        // The grouped product has no form on the matrix cores, nor has a product that norms x.
        let cores = offers.matrix_cores.filter(|_| {
            self.kernel != Kernel::MatmulGrouped && self.kernel.x_norm() == XNorm::None
        });
        // The experts' product on them takes the square tile alone (with or without loading a
        // step ahead): an expert's list of a chunk's tokens is short.
        let coop_tiles = match self.kernel {
            Kernel::MatmulId => &[CoopTile::Square, CoopTile::SquareAhead][..],
            _ => &CoopTile::ALL[..],
        };
        if let Some(cores) = cores {
            let on_cores = coop_tiles.iter();
            tiles.extend(on_cores.map(|&t| MatvecKernel::on_matrix_cores(cores, t)));
        }
        // Nor does a product that norms x have a tile in f16: its sums of squares pass through
        // the tile's workgroup memory, where f16 would overflow.
        if offers.f16_tiles && self.kernel.x_norm() == XNorm::None {
            tiles.extend([64, 128, 256].map(MatvecKernel::f16_tile));
        }
        tiles
    }

    /// A decode step's splits of rows over threads: workgroups of 64 to 256 threads, 4 to 64
    /// threads per row (no more than the row has 32-weight chunks), each summing through workgroup
    /// memory and, where the adapter's subgroups (`subgroup_size` lanes at least) hold a row's
    /// threads, by shuffles. Products of several tokens also try 1 and 2 threads a row: there each
    /// weight meets four x, and where neighbouring threads take neighbouring rows they read the
    /// same x at once (one load on a CPU-backed adapter, where a row's threads each read x of their
    /// own, gathered lane by lane); one token's products read too little x for that to pay for
    /// reading rows apart. For types with a block form, where the adapter runs workgroups on a CPU
    /// (`Offers::cpu_forms`), also the same split by blocks: 1 to 64 threads per row, no more than
    /// the row has blocks. For every type, by blocks shared by 16 threads (a K-quant's) or 4 (32
    /// weights): 16 to 64 threads per row, no more groups of them than the row has blocks; and for
    /// the types whose parts load as vec4s (`takes_wide`), by those wide parts
    /// (`MatvecKernel::wide`), from 8 threads a row. The types with a form on 8-bit x
    /// (`has_int8_form`) also try both splits by parts on it, where plans may round x, summed as a
    /// GPU would (by shuffles where the subgroups allow, through workgroup memory only where not).
    /// A decode step's plain one-token product (`takes_two_rows`) also tries two rows a slot, split
    /// by block parts (on 8-bit x too) or by chunks over 32 threads a row or more, summed as a GPU
    /// would; a step's pair product of several tokens its splits by block parts eight tokens a
    /// layer (`takes_eight_tokens`), and where workgroups run on a CPU, eight rows a slot by chunks
    /// (`takes_eight_rows`: 1 to 4 threads a row, 64 a workgroup).
    fn split_candidates(&self, offers: Offers) -> Vec<MatvecKernel> {
        let Offers {
            subgroup_size,
            int8_x,
            cpu_forms,
            ..
        } = offers;
        let default = self.default_kernel();
        let chunks = default.threads_per_row;
        let blocks = match has_block_form(self.ty) {
            true => self.cols / self.ty.block_len() as u32,
            false => 0,
        };
        let (parts, part_block_len) = block_parts(self.ty, false);
        let part_blocks = self.cols / part_block_len;
        let (wide_parts, _) = block_parts(self.ty, true);
        let takes_wide = self.takes_wide();
        let mut c = vec![default]; // the default comes first
        for workgroup in [64, 128, 256] {
            // One or two threads a row only for several tokens: see above.
            let by_chunks = [1, 2, 4, 8, 16, 32, 64]
                .into_iter()
                .filter(|&t| t <= chunks && (t >= 4 || self.tokens > 1));
            let by_blocks = [1, 2, 4, 8, 16, 32, 64]
                .into_iter()
                .filter(|&t| cpu_forms && t <= blocks);
            let by_parts = [16, 32, 64]
                .into_iter()
                .filter(|&t| t / parts <= part_blocks);
            let by_wide_parts = [8, 16, 32, 64]
                .into_iter()
                .filter(|&t| takes_wide && t / wide_parts <= part_blocks);
            let on_q8 = int8_x && self.takes_q8();
            let by_parts_q8 = by_parts.clone().filter(move |_| on_q8);
            let by_wide_q8 = by_wide_parts.clone().filter(move |_| on_q8);
            let splits = (by_chunks.map(|t| (t, Split::Chunks, false)))
                .chain(by_blocks.map(|t| (t, Split::Blocks, false)))
                .chain(by_parts.map(|t| (t, Split::BlockParts, false)))
                .chain(by_parts_q8.map(|t| (t, Split::PartsQ8, false)))
                .chain(by_wide_parts.map(|t| (t, Split::BlockParts, true)))
                .chain(by_wide_q8.map(|t| (t, Split::PartsQ8, true)));
            for (threads_per_row, split, wide) in splits {
                for subgroup_sum in [false, true] {
                    let k = MatvecKernel {
                        workgroup,
                        threads_per_row,
                        subgroup_sum,
                        split,
                        wide,
                        ..MatvecKernel::default_for(self.cols)
                    };
                    let shuffles = subgroup_size.is_some_and(|s| threads_per_row <= s);
                    let fits = !subgroup_sum || shuffles;
                    // On 8-bit x (a GPU's form) only the sum a GPU would take, to keep tuning short.
                    let gpu_sum = subgroup_sum == shuffles;
                    let needed = split != Split::PartsQ8 || gpu_sum;
                    if fits && needed && k != default {
                        c.push(k);
                    }
                    // Eight tokens a layer: the GPU's forms (reads that coalesce), the GPU's sum.
                    let gpu_split = matches!(split, Split::BlockParts | Split::PartsQ8);
                    if self.takes_eight_tokens() && fits && gpu_split && gpu_sum {
                        c.push(MatvecKernel {
                            eight_tokens: true,
                            ..k
                        });
                    }
                    // Eight rows a slot: a CPU's form (x read once for eight rows), by chunks, 1 to
                    // 4 threads a row, 64 a workgroup: each is a large kernel to build (seconds on
                    // lavapipe), and the workgroup's size is the least of its time there.
                    let few_threads = split == Split::Chunks && threads_per_row <= 4;
                    let eight_rows = cpu_forms && self.takes_eight_rows();
                    if eight_rows && fits && few_threads && workgroup == 64 {
                        c.push(MatvecKernel { slot_size: 4, ..k });
                    }
                    // Two rows a slot: the GPU's splits (and chunks of a wide row's threads, as
                    // a Q6_K product won on an H200), the GPU's sum.
                    let wide_chunks = split == Split::Chunks && threads_per_row >= 32;
                    let two_rows_split = gpu_split || wide_chunks;
                    if self.takes_two_rows() && fits && two_rows_split && gpu_sum {
                        c.push(MatvecKernel { slot_size: 2, ..k });
                    }
                }
            }
        }
        c
    }

    /// Where workgroups run on a CPU, the larger slots by wide parts: each thread loads a part of
    /// a block as vec4s and decodes it once for the slot's rows, each x read once for them all. A
    /// step's pair product of several tokens of a quantized type, four pairs a slot
    /// (`takes_eight_rows_wide`: shaders/eight_rows_parts.wgsl, where the chunks' walk reads every
    /// 32 weights' words and header anew), 64 a workgroup (a large kernel to build); a one-token
    /// product its larger slot (`cpu_slot_size`), 64 or 128 a workgroup. One or two groups of a
    /// block's threads a row, each sum where it holds the row.
    fn wide_slot_candidates(&self, offers: Offers) -> Vec<MatvecKernel> {
        let Offers {
            subgroup_size,
            cpu_forms,
            ..
        } = offers;
        let slot = match self.cpu_slot_size() {
            Some(size) if self.takes_wide() => Some((size, &[64, 128][..])),
            _ => self.takes_eight_rows_wide().then_some((4, &[64][..])),
        };
        let Some((slot_size, workgroups)) = slot.filter(|_| cpu_forms) else {
            return Vec::new();
        };
        let (wide_parts, part_block_len) = block_parts(self.ty, true);
        let part_blocks = self.cols / part_block_len;
        let threads = [wide_parts, 2 * wide_parts];
        let threads = threads
            .into_iter()
            .filter(|&t| t / wide_parts <= part_blocks);
        let mut c = Vec::new();
        for threads_per_row in threads {
            for &workgroup in workgroups {
                for subgroup_sum in [false, true] {
                    if subgroup_sum && subgroup_size.is_none_or(|s| threads_per_row > s) {
                        continue;
                    }
                    c.push(MatvecKernel {
                        workgroup,
                        threads_per_row,
                        subgroup_sum,
                        split: Split::BlockParts,
                        slot_size,
                        wide: true,
                        ..MatvecKernel::default_for(self.cols)
                    });
                }
            }
        }
        c
    }
}

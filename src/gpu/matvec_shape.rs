//! A matvec's shape (`MatvecShape`: its kernel, weight type, rows, columns and tokens) and the kernel
//! shapes it may run in (`MatvecKernel`): the default that serves every adapter, the default where
//! the adapter runs workgroups on a CPU, and the candidates the tuner times (`Tuning` keeps the
//! winners).

use super::kernels::{block_parts, has_block_form, has_int8_form, has_wide_form};
use super::matvec_kernel::{MatvecKernel, Offers, Split};
use super::tiles::{CoopTile, ROWS_TILE_WORKGROUP};
use super::{Activation, Kernel, KvType, Store, XNorm, PAIR_TOKENS, STEP_TOKENS_MAX};
use crate::gguf::GgmlType;

/// What a matvec dispatch's shape is, for finding its winner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatvecShape {
    /// `Kernel::Matvec`, `Kernel::MatvecPairs`, `Kernel::MatvecId` (rows: the rows its slots
    /// compute together), `Kernel::Matmul` or `Kernel::MatmulId` (rows: one expert's).
    pub kernel: Kernel,
    pub ty: GgmlType,
    pub cols: u32,
    pub rows: u32,
    /// Tokens a workgroup takes: 1, or 4 for `Kernel::MatvecPairs` in a run of several (a step of
    /// parallel sequences), which reads each weight once for the four and has winners of its own;
    /// for `Kernel::Matmul` and `Kernel::MatmulId`, the tokens of its plan's runs (a prompt's
    /// chunk).
    pub tokens: u32,
    /// The most tokens of the runs whose winner it names, where more than `tokens` (1 otherwise): a
    /// step's pair product in a plan of 5 to 8 rows (`STEP_TOKENS_MAX`), whose runs take two layers
    /// of four-token workgroups, or one of eight (`MatvecKernel::eight_tokens`), and have winners
    /// apart from those of runs of up to four (`Plan::push_matvec`).
    pub runs_of: u32,
    /// Matrices of `rows` rows the dispatch computes side by side, a layer of workgroups each: the
    /// experts of `Kernel::MatmulId`; for `Kernel::Matvec`, the groups of rows that read x each of
    /// their own (per-head matrices); for `Kernel::MatvecId`, the chosen experts' slots where each
    /// reads an x of its own (down), 1 where all read the token's one x; 1 for the others.
    pub matrices: u32,
}

impl MatvecShape {
    /// The shape of a matvec of W (rows of its part) for one token at a time.
    pub fn of(kernel: Kernel, ty: GgmlType, cols: u32, rows: u32) -> MatvecShape {
        MatvecShape {
            kernel,
            ty,
            cols,
            rows,
            tokens: 1,
            runs_of: 1,
            matrices: 1,
        }
    }

    /// This shape (a step's pair product, `Kernel::MatvecPairs`) in a plan of `batch` rows (2 to
    /// `STEP_TOKENS_MAX`): four tokens a layer of workgroups, its winner timed over runs of up to
    /// four tokens, or where the plan holds more, over its runs of five to eight.
    pub fn in_step(self, batch: u32) -> MatvecShape {
        MatvecShape {
            tokens: PAIR_TOKENS,
            runs_of: match batch {
                0..=PAIR_TOKENS => 1,
                _ => STEP_TOKENS_MAX,
            },
            ..self
        }
    }

    /// The tokens a run of its plan holds when its kernels are timed (`Engine::tune`): its winner
    /// serves those.
    pub fn timed_tokens(&self) -> u32 {
        self.tokens.max(self.runs_of)
    }

    /// The shape of a prompt chunk's product in tiles (`Kernel::Matmul`, `MatmulId`, `MatmulGrouped`)
    /// over runs of `tokens`: `matrices` of `rows` rows each side by side (the experts over their
    /// lists, the heads of per-head matrices; 1 for a plain product).
    pub fn chunk(
        kernel: Kernel,
        ty: GgmlType,
        (cols, rows): (u32, u32),
        matrices: u32,
        tokens: u32,
    ) -> MatvecShape {
        MatvecShape {
            tokens,
            matrices,
            ..MatvecShape::of(kernel, ty, cols, rows)
        }
    }

    /// Whether its kernels multiply tiles of rows by tokens (`matmul_tile`, `CoopTile`): a prompt
    /// chunk's products.
    pub fn is_tiled(&self) -> bool {
        matches!(
            self.kernel,
            Kernel::Matmul(..) | Kernel::MatmulId | Kernel::MatmulGrouped
        )
    }

    pub fn key(&self) -> String {
        let mut shape = format!("{} {}x{}", self.ty, self.cols, self.rows);
        if self.tokens > 1 {
            shape += &format!(" x{}", self.tokens);
        }
        if self.runs_of > self.tokens {
            shape += &format!(" of {}", self.runs_of);
        }
        match self.kernel {
            Kernel::MatvecPairs(store, XNorm::None) => shape + " " + store_name(store),
            Kernel::MatvecPairs(store, XNorm::Rms(_)) => {
                shape + " " + store_name(store) + " normed"
            }
            Kernel::MatvecId if self.matrices > 1 => {
                shape + &format!(" experts, {} rows of x", self.matrices)
            }
            Kernel::MatvecId => shape + " experts",
            Kernel::MatvecIdGlu(act) => shape + " experts " + store_name(Store::Glu(act)),
            Kernel::Matmul(store, XNorm::None) => shape + " matmul " + store_name(store),
            Kernel::Matmul(store, XNorm::Rms(_)) => {
                shape + " matmul " + store_name(store) + " normed"
            }
            Kernel::MatmulId => shape + &format!(" matmul experts {}", self.matrices),
            Kernel::MatmulGrouped => shape + &format!(" matmul grouped {}", self.matrices),
            Kernel::Matvec if self.matrices > 1 => shape + &format!(" grouped {}", self.matrices),
            _ => shape,
        }
    }

    /// The kernel shape that serves every adapter: `MatvecKernel::default_for`, or a matmul's
    /// 64-thread tile. The candidates are shaped from it (`candidates`).
    pub fn default_kernel(&self) -> MatvecKernel {
        match self.is_tiled() {
            true => MatvecKernel::tile(64),
            false => MatvecKernel::default_for(self.cols),
        }
    }

    /// Whether its candidates include the plain product's tiles, the 64-thread one and the one in
    /// registers: a step's pair product of several tokens (a parallel step's, a speculative check's),
    /// its x read as it is or normed on the way in (shaders/tile_x_rms_norm.wgsl, as GPUs fold the
    /// norms into these products). A tile reads each weight once for all the step's tokens where the
    /// pair kernel reads it once for every four, and the tile in registers reads each x once for a
    /// workgroup where the pair kernel's threads each read their own (lane by lane on a CPU).
    pub fn takes_tiles(&self) -> bool {
        matches!(self.kernel, Kernel::MatvecPairs(..)) && self.tokens > 1
    }

    /// Whether its candidates include eight tokens a layer of workgroups (`MatvecKernel::eight_tokens`):
    /// a step's pair product of several tokens, which a step of 5 to 8 sequences or a speculative
    /// check of 5 to 8 rows runs.
    pub fn takes_eight_tokens(&self) -> bool {
        self.takes_tiles()
    }

    /// Whether its candidates include two rows a slot (`MatvecKernel::slot_size`): a decode step's
    /// plain product of one token (the attention output, down, the head), whose rows all read the
    /// same x.
    pub fn takes_two_rows(&self) -> bool {
        self.kernel == Kernel::Matvec && self.tokens == 1 && self.matrices == 1
    }

    /// The size of a slot (`MatvecKernel::slot_size`) its candidates include beyond the others
    /// where workgroups run on a CPU, by wide parts: a decode step's plain one-token product
    /// (`takes_two_rows`) four rows, its one-token pair product two pairs. Where a CPU's SIMD lanes
    /// load x lane by lane, a slot's rows share those loads: on lavapipe, Qwen2.5-Coder 0.5B's
    /// gate and up (Q5_0) took 66 ms of a step in two pairs a slot against 99 in one, and its Q8_0
    /// head 41 ms in four rows against 50 in two.
    pub fn cpu_slot_size(&self) -> Option<u32> {
        let one_token = self.tokens == 1 && self.matrices == 1;
        match self.kernel {
            Kernel::Matvec if self.takes_two_rows() => Some(4),
            Kernel::MatvecPairs(..) if one_token => Some(2),
            _ => None,
        }
    }

    /// Whether its kernels have a form whose slot of a row's threads takes `size` rows, or pairs
    /// of a pair product (`MatvecKernel::slot_size`): 1 for every matvec; a one-token plain product
    /// (`takes_two_rows`) 2 or 4, a one-token pair product 2, a step's pair product of several
    /// tokens 4 (`takes_eight_rows`). A tuning file's winner without one is not taken
    /// (`Tuning::matvec`).
    pub fn has_slot(&self, size: u32) -> bool {
        match size {
            1 => true,
            2 => self.takes_two_rows() || self.cpu_slot_size() == Some(2),
            4 => self.cpu_slot_size() == Some(4) || self.takes_eight_rows(),
            _ => false,
        }
    }

    /// Whether its candidates include wide block parts (`MatvecKernel::wide`): a decode step's
    /// product of a type with that form (`has_wide_form`), plain, in pairs or over the chosen
    /// experts (shaders/matvec.wgsl, matvec_pairs.wgsl, matvec_id.wgsl, matvec_id_glu.wgsl, which
    /// bind W as vec4s for them); not a prompt's tiles.
    pub fn takes_wide(&self) -> bool {
        !self.is_tiled() && has_wide_form(self.ty)
    }

    /// Whether its candidates include eight rows a slot (four pairs, `MatvecKernel::slot_size`): a
    /// step's pair product of several tokens, as `takes_eight_tokens`.
    pub fn takes_eight_rows(&self) -> bool {
        self.takes_tiles()
    }

    /// Whether they include eight rows a slot by wide parts (shaders/eight_rows_parts.wgsl): those of
    /// a quantized type, whose wide part is 32 weights (8 vec4s); a float type's is 16.
    pub fn takes_eight_rows_wide(&self) -> bool {
        let (parts, block_len) = block_parts(self.ty, true);
        self.takes_eight_rows() && self.takes_wide() && block_len / parts == 32
    }

    /// The kernel shape unless tuned on `adapter`: `default_kernel`, but where the adapter runs
    /// workgroups on a CPU, about the shapes `wick tune` picks there. A plain prompt product takes its
    /// tile in registers, timed at 4.7-6.1x the 64-thread tile on each of SmolLM2's prompt shapes on
    /// lavapipe (the tile's reads of workgroup memory differ by lane, and such a CPU loads them lane
    /// by lane). A step's pair product of several tokens (`takes_eight_rows`) takes eight rows a
    /// slot, 2 threads a row: `wick tune` gave eight rows (1 to 4 threads a row) to four of SmolLM2's
    /// five such shapes there (the fifth, of 576 rows, kept the tile in registers), and with them
    /// untuned a step of 4 sequences took 218-232 ms rather than 517-561 in the tile in
    /// registers (a one-token step 146-162 ms). A quantized type's takes them by wide parts, a
    /// block's one group of threads a row (`takes_eight_rows_wide`): the tuner gave that form to all
    /// seven of Qwen2.5-Coder 0.5B's check-of-4 products on lavapipe, a check's kernels 18-30% faster
    /// than by chunks. A decode step's one-token product of a type with a wide form takes its larger
    /// slot (`cpu_slot_size`) by wide parts, a block's one group of threads a row, 128 a workgroup:
    /// the tuner gave such slots to eight of Qwen2.5-Coder 0.5B's nine one-token products on
    /// lavapipe. A product of a few tokens otherwise takes 4 threads a row (`CPU_THREADS_PER_ROW`). Both sum through workgroup memory: shuffles, which the tuner
    /// prefers there, are offered only on a device where a check has found that they sum a row's
    /// threads (`ops::matvec::subgroup_sums_work`). The experts' and grouped products keep the 64-thread
    /// tile unless tuned: in registers, the random MoE and DeepSeek-V2 tests' small chunks ran 2.7x and
    /// 5x as long.
    pub fn untuned_kernel(&self, adapter: Adapter) -> MatvecKernel {
        let default = self.default_kernel();
        if !adapter.runs_on_cpu {
            return default;
        }
        if matches!(self.kernel, Kernel::Matmul(..)) {
            return MatvecKernel::tile(ROWS_TILE_WORKGROUP);
        }
        if self.takes_eight_rows() {
            let wide = self.takes_eight_rows_wide();
            let (threads_per_row, split) = match wide {
                true => (block_parts(self.ty, true).0, Split::BlockParts),
                false => (2, Split::Chunks),
            };
            return MatvecKernel {
                threads_per_row,
                split,
                slot_size: 4,
                wide,
                ..default
            };
        }
        if let Some(slot_size) = self.cpu_slot_size().filter(|_| self.takes_wide()) {
            return MatvecKernel {
                workgroup: 128,
                threads_per_row: block_parts(self.ty, true).0,
                split: Split::BlockParts,
                slot_size,
                wide: true,
                ..default
            };
        }
        // The other tiles, and rows of fewer chunks than that, keep the default.
        if self.is_tiled() || default.threads_per_row < CPU_THREADS_PER_ROW {
            return default;
        }
        MatvecKernel {
            workgroup: 128,
            threads_per_row: CPU_THREADS_PER_ROW,
            ..default
        }
    }

    /// Whether the adapter can run the shape in `kernel`: a matmul's tile needs its workgroup
    /// memory (128 x 32 and 128 x 64: 20 and 24 KiB, more than WebGPU's 16 KiB that every adapter
    /// has), and over the experts, two words more a token of the tile (its item, and where its x
    /// starts); a split on 8-bit x needs room for x (`q8_workgroup_bytes`).
    pub fn fits(&self, kernel: &MatvecKernel, limits: &wgpu::Limits) -> bool {
        if kernel.split == Split::PartsQ8 {
            let bytes = q8_workgroup_bytes(self.cols, self.x_rows());
            return bytes <= limits.max_compute_workgroup_storage_size;
        }
        if !kernel.is_tile() {
            return true;
        }
        if kernel.workgroup > limits.max_compute_invocations_per_workgroup {
            return false;
        }
        let (bytes, tokens) = match kernel.cooperative {
            Some(size) => {
                let tile = kernel.coop_tile;
                (tile.workgroup_bytes(size), tile.tile().tokens)
            }
            None => {
                let tile = kernel.matmul_tile();
                (tile.workgroup_bytes(), tile.tokens)
            }
        };
        let items = match self.kernel {
            Kernel::MatmulId => 8 * tokens,
            _ => 0,
        };
        bytes + items <= limits.max_compute_workgroup_storage_size
    }

    /// Whether the split on 8-bit x (`Split::PartsQ8`) can take it: a decode step's product of a type
    /// with that form whose workgroups each read the same rows of x whole (`x_rows`), which they
    /// quantize together first: a plain matvec (not in groups, which read x each of their own), a
    /// pair kernel, and the chosen experts' products (gate and up read the token's one x, down the
    /// slots' x side by side).
    pub fn takes_q8(&self) -> bool {
        let kernel = match self.kernel {
            Kernel::Matvec | Kernel::MatvecPairs(..) | Kernel::MatvecIdGlu(_) => self.matrices == 1,
            Kernel::MatvecId => true,
            _ => false,
        };
        kernel && has_int8_form(self.ty)
    }

    /// The rows of x each workgroup reads whole: its tokens', and for the chosen experts' down, the
    /// slots'.
    pub fn x_rows(&self) -> u32 {
        match self.kernel {
            Kernel::MatvecId => self.tokens * self.matrices,
            _ => self.tokens,
        }
    }

    /// The candidates `Engine::tune` times: workgroups of 64 to 256 threads, 4 to 64 threads per row
    /// (no more than the row has 32-weight chunks), each summing through workgroup memory and, where
    /// the adapter's subgroups (`subgroup_size` lanes at least) hold a row's threads, by shuffles.
    /// Products of several tokens also try 1 and 2 threads a row: there each weight meets four x,
    /// and where neighbouring threads take neighbouring rows they read the same x at once (one load
    /// on a CPU-backed adapter, where a row's threads each read x of their own, gathered lane by
    /// lane); one token's products read too little x for that to pay for reading rows apart.
    /// For types with a block form, where the adapter runs workgroups on a CPU
    /// (`Offers::cpu_forms`), also the same split by blocks: 1 to 64 threads per row, no more
    /// than the row has blocks. For every type, by blocks shared by 16 threads (a K-quant's) or 4
    /// (32 weights): 16 to 64 threads per row, no more groups of them than the row has blocks.
    /// A decode step's products of the types with a form on 8-bit x (`has_int8_form`) also try the
    /// split by parts on it, where plans may round x, summing by shuffles where the subgroups allow and
    /// through workgroup memory only where not. A matmul's candidates are its tiles
    /// (`matmul_tile`), which not every adapter `fits`, the tile in registers among them, and where
    /// the adapter has matrix cores that plans may use
    /// (`Gpu::matrix_cores`), the tiles on them (`CoopTile`: the experts' product the square one,
    /// the grouped product none), and where plans may hold
    /// tiles in f16 (`Offers::f16_tiles`), the tiles in workgroup memory so. A decode step's plain
    /// one-token product (`takes_two_rows`) also tries two rows a slot, split by block parts (on
    /// 8-bit x too) or by chunks over 32 threads a row or more, summed as a GPU would. A step's
    /// pair product of several tokens also tries the 64-thread tile and the tile in registers
    /// (`takes_tiles`), its splits by block parts eight tokens a layer (`takes_eight_tokens`), and
    /// where workgroups run on a CPU, eight rows a slot (`takes_eight_rows`), by chunks or by wide
    /// parts. There a one-token product also tries a larger slot by wide parts (`cpu_slot_size`).
    /// A decode step's products of the K-quants and float types whose blocks keep 16-byte bounds
    /// (`takes_wide`) also try the splits by block parts (on 8-bit x too) with each thread loading
    /// vec4s of its part (`MatvecKernel::wide`), from 8 threads a row.
    pub fn candidates(&self, offers: Offers) -> Vec<MatvecKernel> {
        let Offers {
            subgroup_size,
            matrix_cores,
            int8_x,
            f16_tiles,
            cpu_forms,
        } = offers;
        let default = self.default_kernel();
        if self.is_tiled() {
            let tile = MatvecKernel::tile;
            // The tile in registers is for adapters that run workgroups on a CPU.
            let mut tiles = vec![default, tile(128), tile(256), tile(ROWS_TILE_WORKGROUP)];
            // The grouped product has no form on the matrix cores, nor has a product that norms x.
            let cores = matrix_cores.filter(|_| {
                self.kernel != Kernel::MatmulGrouped && self.kernel.x_norm() == XNorm::None
            });
            // The experts' product on them takes the square tile alone.
            let coop_tiles = match self.kernel {
                Kernel::MatmulId => &[CoopTile::Square][..],
                _ => &CoopTile::ALL[..],
            };
            if let Some(cores) = cores {
                let on_cores = coop_tiles.iter();
                tiles.extend(on_cores.map(|&t| MatvecKernel::on_matrix_cores(cores, t)));
            }
            // Nor does a product that norms x have a tile in f16: its sums of squares pass through
            // the tile's workgroup memory, where f16 would overflow.
            if f16_tiles && self.kernel.x_norm() == XNorm::None {
                tiles.extend([64, 128, 256].map(MatvecKernel::f16_tile));
            }
            return tiles;
        }
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
                        cooperative: None,
                        coop_tile: CoopTile::Square,
                        eight_tokens: false,
                        f16_tile: false,
                        slot_size: 1,
                        wide,
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
        // Eight rows a slot by wide parts, a CPU's form as by chunks above: a quantized type's part
        // of a block, 32 weights, loaded and decoded once for the block (shaders/eight_rows_parts.wgsl)
        // where the chunks' walk reads each 32 weights' words and header anew; one or two groups of
        // a block's threads a row, 64 a workgroup.
        if cpu_forms && self.takes_eight_rows_wide() {
            let rows_threads = [wide_parts, 2 * wide_parts];
            for threads_per_row in rows_threads
                .into_iter()
                .filter(|&t| t / wide_parts <= part_blocks)
            {
                for subgroup_sum in [false, true] {
                    if subgroup_sum && !subgroup_size.is_some_and(|s| threads_per_row <= s) {
                        continue;
                    }
                    c.push(MatvecKernel {
                        workgroup: 64,
                        threads_per_row,
                        subgroup_sum,
                        split: Split::BlockParts,
                        slot_size: 4,
                        wide: true,
                        ..MatvecKernel::default_for(self.cols)
                    });
                }
            }
        }
        // A one-token product's larger slot (`cpu_slot_size`): four rows, or two pairs, each x
        // read once for the four, by wide parts, one or two groups of a block's threads a row.
        if let Some(slot_size) = self.cpu_slot_size().filter(|_| cpu_forms && takes_wide) {
            let rows_threads = [wide_parts, 2 * wide_parts];
            for threads_per_row in rows_threads
                .into_iter()
                .filter(|&t| t / wide_parts <= part_blocks)
            {
                for (workgroup, subgroup_sum) in
                    [(64, false), (64, true), (128, false), (128, true)]
                {
                    if subgroup_sum && !subgroup_size.is_some_and(|s| threads_per_row <= s) {
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
        if self.takes_tiles() {
            c.extend([64, ROWS_TILE_WORKGROUP].map(MatvecKernel::tile));
        }
        c
    }
}

/// Workgroup memory of a split on 8-bit x for `tokens` rows of `cols`: x's bytes, a scale and a sum
/// for each 32 of them, and at most 1 KiB (reduce.wgsl's sums) and 10 KiB (row_sum.wgsl's) beside.
pub fn q8_workgroup_bytes(cols: u32, tokens: u32) -> u32 {
    tokens * (cols + cols / 32 * 8) + 1024 + 10 * 1024
}

/// How a shape's key names the store of a kernel that computes rows in pairs.
fn store_name(store: Store) -> &'static str {
    match store {
        Store::Rows => "pairs",
        Store::Glu(Activation::Silu) => "swiglu",
        Store::Glu(Activation::GeluTanh) => "geglu",
        Store::Glu(Activation::GeluQuick) => "geglu_quick",
        Store::Glu(Activation::SwigluOai) => "swiglu_oai",
        Store::RopeKv(KvType::F32) => "rope_kv",
        Store::RopeKv(KvType::F16) => "rope_kv_f16",
    }
}

/// Threads a row of a few tokens' products unless tuned where workgroups run on a CPU: `wick tune`
/// chose 4 for each of SmolLM2's five decode shapes on lavapipe (wg128 to 256, summed by shuffles),
/// 1.25-1.43x the 16 or 32 threads of `default_threads_per_row` there (1.3x summed through workgroup
/// memory); fewer threads a row is fewer partial sums to add, which such a CPU does lane by lane.
const CPU_THREADS_PER_ROW: u32 = 4;

/// What the kernels chosen unless tuned depend on, of the adapter (`Gpu::adapter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adapter {
    /// Its workgroup memory, bytes: which tiles and recurrence forms it holds.
    pub workgroup_bytes: u32,
    /// Whether it runs workgroups on the CPU (`Gpu::runs_on_cpu`), bound by arithmetic.
    pub runs_on_cpu: bool,
    /// Workgroups a step's attention split over its keys aims at, a layer, on a GPU
    /// (`Gpu::split_workgroups`, `ops::attention::splits`).
    pub split_workgroups: u32,
}

#[cfg(test)]
mod tests;

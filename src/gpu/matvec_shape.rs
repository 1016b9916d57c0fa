//! A matvec's shape (`MatvecShape`: its kernel, weight type, rows, columns and tokens) and the kernel
//! shapes it may run in (`MatvecKernel`): the default that serves every adapter, the default where
//! the adapter runs workgroups on a CPU, and the candidates the tuner times (`Tuning` keeps the
//! winners).

use super::kernels::{block_parts, has_int8_form, has_wide_form};
use super::matvec_kernel::{MatvecKernel, Split};
use super::tiles::ROWS_TILE_WORKGROUP;
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
            Kernel::MatvecIdGlu(act, XNorm::None) => {
                shape + " experts " + store_name(Store::Glu(act))
            }
            Kernel::MatvecIdGlu(act, XNorm::Rms(_)) => {
                shape + " experts " + store_name(Store::Glu(act)) + " normed"
            }
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
    /// lavapipe (an untuned step 1.5-2x faster there). A product of a few tokens otherwise takes 4
    /// threads a row (`CPU_THREADS_PER_ROW`). Both sum through workgroup memory: shuffles, which the tuner
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
            Kernel::Matvec | Kernel::MatvecPairs(..) | Kernel::MatvecIdGlu(..) => {
                self.matrices == 1
            }
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
        Store::Apart => "apart",
        Store::GluWith(Activation::Silu) => "swiglu_with",
        Store::GluWith(Activation::GeluTanh) => "geglu_with",
        Store::GluWith(Activation::GeluQuick) => "geglu_quick_with",
        Store::GluWith(Activation::SwigluOai) => "swiglu_oai_with",
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

mod candidates;
#[cfg(test)]
mod tests;

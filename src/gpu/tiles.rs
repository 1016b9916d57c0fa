//! The tiles of the kernels that multiply or attend a tile at a time: their sizes and the workgroup
//! memory they take, which the pipelines build their sources from and the tuner checks an adapter
//! holds.

use serde::{Deserialize, Serialize};

/// The tile of W's rows by X's tokens a matmul workgroup computes (shaders/matmul_tile.wgsl).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulTile {
    pub rows: u32,
    pub tokens: u32,
    /// Rows of the tile one thread accumulates, each for 4 tokens (for all of them in registers).
    pub rows_per_thread: u32,
    /// Whether the tile's steps pass through workgroup memory (shaders/matmul_tile.wgsl), or each
    /// thread's rows stay in its registers (shaders/matmul_rows_tile.wgsl).
    pub shared: bool,
    /// Whether shaders/matmul_tile.wgsl holds its steps in f16, two to a word (shaders/tile_f16.wgsl):
    /// half the bytes of f32 to store and to read back, each weight and x rounded to f16 on the
    /// way in; the sums stay f32. (The matrix cores' tile is f16 in a form of its own.)
    pub f16: bool,
}

impl MatmulTile {
    /// Workgroup memory it takes: a 32-weight step of its rows and tokens, where they pass through
    /// it. (The experts' products list their items beside, `MatvecShape::fits`.)
    pub fn workgroup_bytes(&self) -> u32 {
        let vec4_bytes = if self.f16 { 8 } else { 16 };
        match self.shared {
            true => (8 * self.rows + 8 * self.tokens) * vec4_bytes,
            false => 0,
        }
    }

    /// It with its steps in f16 (`f16`), or f32.
    pub fn in_f16(self, f16: bool) -> MatmulTile {
        MatmulTile { f16, ..self }
    }

    /// The tile file that multiplies it (on the matrix cores, matmul_coop_tile.wgsl instead).
    pub(super) fn source(&self) -> &'static str {
        match self.shared {
            true => include_str!("../../shaders/matmul_tile.wgsl"),
            false => include_str!("../../shaders/matmul_rows_tile.wgsl"),
        }
    }
}

/// The workgroup of the tile in registers (shaders/matmul_rows_tile.wgsl): one SIMD group of a CPU's
/// 256-bit registers.
pub const ROWS_TILE_WORKGROUP: u32 = 8;

/// The tokens of the tile in registers where it takes a step's few tokens (a parallel step's, a
/// speculative check's: `MatvecShape::takes_tiles`) rather than a prompt chunk's 64: a thread's sums
/// are 8 rows by 8 tokens rather than by 64, most of which a step of 2 to 8 tokens left empty. On
/// lavapipe a step of Qwen2.5-Coder 1.5B's 2 sequences took 1737 ms rather than 1850, of 8
/// sequences 2282 ms rather than 2410.
pub const STEP_ROWS_TILE_TOKENS: u32 = 8;

/// A matmul's tile by its threads. 64 (every adapter) take 64 rows by 16 tokens, 4 rows by 4 tokens
/// each; 256 take 128 rows by 64 tokens, 8 rows by 4 each: a dequantized weight meets 64 tokens
/// rather than 16, and a thread's read of workgroup memory feeds twice the products (llama.cpp's
/// tiled products are of this size), for 24 KiB of workgroup memory (12 in f16, within the 16 KiB
/// every WebGPU adapter has); 128 take 128 rows by 32 tokens, 8 rows by 4 each, for 20 KiB (10 in
/// f16): twice the workgroups of a short chunk. 8 threads take 64
/// rows by 64 tokens in registers, 8 rows a thread (`ROWS_TILE_WORKGROUP`).
pub fn matmul_tile(workgroup: u32) -> MatmulTile {
    let tile = |rows, tokens, rows_per_thread| MatmulTile {
        rows,
        tokens,
        rows_per_thread,
        shared: true,
        f16: false,
    };
    match workgroup {
        256 => tile(128, 64, 8),
        128 => tile(128, 32, 8),
        ROWS_TILE_WORKGROUP => MatmulTile {
            shared: false,
            ..tile(64, 64, 8)
        },
        _ => tile(64, 16, 4),
    }
}

/// `Kernel::AttentionTiled(head_dim)`'s sizes: the vec4s of a head, and the keys of a tile, whose
/// keys and values fill up to 16 KiB of workgroup memory (32 keys of 64 dimensions, 16 of 128, 8 of
/// 256).
pub const fn attention_tile(head_dim: u32) -> (u32, u32) {
    let vec4s = head_dim / 4;
    (vec4s, 512 / vec4s)
}

/// The workgroup memory of `Kernel::AttentionTiled(head_dim)`: the tiles, and the workgroup's range.
pub const fn attention_tile_bytes(head_dim: u32) -> u32 {
    let (vec4s, keys) = attention_tile(head_dim);
    2 * vec4s * keys * 16 + 16
}

/// The tiles of the kernels on the matrix cores (shaders/matmul_coop_tile.wgsl): rows of W by
/// tokens, in blocks of `matrices` x `matrices` products a subgroup, for products of S x S. Between
/// two barriers a workgroup dequantizes a step of its rows' weights and converts its tokens' x into
/// workgroup memory, and then multiplies them. On an H200 the square tile ran at 37 TFLOP/s, bound
/// by that loading (a step's 8 products a subgroup against a dequantized value and a converted x a
/// thread, each stored a value at a time, two threads dequantizing each chunk and keeping half), so
/// the tall tile takes twice the rows (each x read serves twice the products) and two chunks a step
/// (half the barriers for each product; a thread a chunk where it has 256), and the large one, as
/// llama.cpp's tiles on matrix cores do, gives each subgroup a block of 4 x 4 products (64 x 64 at
/// S = 16) in a tile of 128 x 128: 32 products a subgroup a step, four times the square tile's, for
/// each weight and x loaded (at the cost of its sums' registers, which leave fewer subgroups to a
/// core), alone or with as many subgroups again that only load and store (each thread then converts
/// half as much between two barriers, and the multiplying subgroups wait less on them). All are
/// offered to the tuner where they fit (the tall one takes 35 KiB); the square one, the first made,
/// is the experts' (with or without loading a step ahead). Two more load a step ahead: the workgroup holds two steps of weights and x, and
/// while its subgroups multiply one the loads fill the other, one barrier a step rather than two, so
/// that a load's wait on memory overlaps the products rather than stalling every subgroup between
/// two barriers (the pipelined main loop of CUTLASS and of FlashAttention's kernels). The square tile
/// so (all its threads load the next step, then multiply this one), and the large tile with helpers
/// so, its loading subgroups apart from its multiplying ones (the helpers load alone, a step ahead;
/// the others only multiply): 44 KiB at S = 16, within the 48 KiB of NVIDIA's Vulkan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoopTile {
    /// 64 rows by 64 tokens, 32 weights a step, 2 x 2 products a subgroup.
    #[default]
    Square,
    /// 128 rows by 64 tokens, 64 weights a step, 2 x 2 products a subgroup.
    Tall,
    /// 128 rows by 128 tokens, 32 weights a step, 4 x 4 products a subgroup.
    Large,
    /// `Large` with twice the subgroups, those past the first half loading and storing only.
    LargeHelped,
    /// `Square` loading a step ahead.
    SquareAhead,
    /// `LargeHelped` loading a step ahead, in its helpers alone.
    LargeHelpedAhead,
}

impl CoopTile {
    pub const ALL: [CoopTile; 6] = [
        CoopTile::Square,
        CoopTile::Tall,
        CoopTile::Large,
        CoopTile::LargeHelped,
        CoopTile::SquareAhead,
        CoopTile::LargeHelpedAhead,
    ];

    pub fn is_square(&self) -> bool {
        *self == CoopTile::Square
    }

    pub fn rows(self) -> u32 {
        match self.unpipelined() {
            CoopTile::Square => 64,
            _ => 128,
        }
    }

    pub fn tokens(self) -> u32 {
        match self.unpipelined() {
            CoopTile::Square | CoopTile::Tall => 64,
            _ => 128,
        }
    }

    /// The 32-weight chunks of a row a step holds (CHUNKS in matmul_coop_tile.wgsl).
    pub fn chunks(self) -> u32 {
        match self {
            CoopTile::Tall => 2,
            _ => 1,
        }
    }

    /// The products a subgroup's block holds across its tokens and across its rows (MB in
    /// matmul_coop_tile.wgsl).
    pub fn matrices(self) -> u32 {
        match self.unpipelined() {
            CoopTile::Square | CoopTile::Tall => 2,
            _ => 4,
        }
    }

    /// The steps of weights and x its workgroup memory holds (BUFFERS in matmul_coop_tile.wgsl):
    /// two where it loads a step ahead.
    pub fn buffers(self) -> u32 {
        match self {
            CoopTile::SquareAhead | CoopTile::LargeHelpedAhead => 2,
            _ => 1,
        }
    }

    /// Whether it has as many subgroups again as multiply, for the loads and stores (HELPED in
    /// matmul_coop_tile.wgsl).
    pub fn helped(self) -> bool {
        matches!(self, CoopTile::LargeHelped | CoopTile::LargeHelpedAhead)
    }

    /// The tile it loads a step ahead of, where it does: its sizes.
    fn unpipelined(self) -> CoopTile {
        match self {
            CoopTile::SquareAhead => CoopTile::Square,
            CoopTile::LargeHelpedAhead => CoopTile::LargeHelped,
            tile => tile,
        }
    }

    /// Its rows and tokens, as the tiles of the other kernels give theirs.
    pub fn tile(self) -> MatmulTile {
        MatmulTile {
            rows: self.rows(),
            tokens: self.tokens(),
            rows_per_thread: 0,
            shared: true,
            f16: false,
        }
    }

    /// The subgroups that multiply, for products of `size` x `size`: one a block (SUBGROUPS in
    /// matmul_coop_tile.wgsl).
    pub fn subgroups(self, size: u32) -> u32 {
        let block = self.matrices() * size;
        (self.rows() / block) * (self.tokens() / block)
    }

    /// Threads of its workgroup on subgroups of `lanes`: the multiplying subgroups, and as many
    /// again that load and store only where it has them.
    pub fn workgroup(self, size: u32, lanes: u32) -> u32 {
        let helped = if self.helped() { 2 } else { 1 };
        self.subgroups(size) * lanes * helped
    }

    /// Workgroup memory it takes: f16 steps of its rows and tokens (one or two), each row 8 values
    /// longer than a step (matmul_coop_tile.wgsl's KS), and the sums of one product of each
    /// subgroup's block.
    pub fn workgroup_bytes(self, size: u32) -> u32 {
        let row = 32 * self.chunks() + 8;
        let steps = (self.rows() + self.tokens()) * row * 2 * self.buffers();
        steps + self.subgroups(size) * size * size * 4
    }
}

//! How a matvec kernel runs (`MatvecKernel`): its workgroup, the threads of a row and how they split
//! it and sum their parts, or the tile a matmul multiplies; and what an adapter offers such kernels
//! (`Offers`). `MatvecShape` (matvec_shape.rs) says which of them a product's shape may take.

use super::tiles::{matmul_tile, CoopTile, MatmulTile};
use super::{MatrixCores, Rounding};
use serde::{Deserialize, Serialize};

/// How a matvec kernel runs: its override constants, and how a row's threads sum their parts. A
/// matmul (a prompt's product, `Kernel::Matmul`) has only a workgroup size, which names its tile
/// (`matmul_tile`), and no threads per row (0); or it multiplies on the matrix cores
/// (`cooperative`), a subgroup for each block of its tile (`coop_tile`). A step's pair product of
/// several tokens may run as a tile too (`MatvecShape::takes_tiles`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MatvecKernel {
    pub workgroup: u32,
    pub threads_per_row: u32,
    /// By subgroup shuffles (shaders/row_sum_subgroup.wgsl) rather than through workgroup memory.
    pub subgroup_sum: bool,
    /// How a row's threads divide it.
    #[serde(default)]
    pub split: Split,
    /// A matmul's tile multiplied by cooperative matrices of this size (shaders/matmul_coop.wgsl):
    /// f16 x and weights, f32 sums.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooperative: Option<u32>,
    /// The tile it multiplies there (`CoopTile`).
    #[serde(default, skip_serializing_if = "CoopTile::is_square")]
    pub coop_tile: CoopTile,
    /// A step's pair product of several tokens takes eight a layer of workgroups rather than four:
    /// each workgroup multiplies its rows by four tokens and then by the next four, their weights
    /// read again from the caches the first four left them in, where a second layer of workgroups
    /// would read them from memory again (shaders/matvec_pairs.wgsl).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub eight_tokens: bool,
    /// A matmul's tile passes its steps through workgroup memory as f16 rather than f32
    /// (`MatmulTile::f16`), where plans may round a prompt's products (`Offers::f16_tiles`):
    /// llama.cpp's tiled products on GPUs without matrix cores hold their tiles so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub f16_tile: bool,
    /// What a slot of a row's threads takes, in its kernel's unit: a plain product's rows, a pair
    /// product's pairs of rows (`PipelineKey::rows_per_slot`). 1; or more, each x read once for
    /// them all and more weights in flight a thread: a decode step's plain one-token product 2
    /// or 4 rows (shaders/matvec.wgsl's `ROWS`), as llama.cpp's matvecs take two rows or more a
    /// workgroup; its one-token pair product 2 pairs (matvec_pairs.wgsl's `PAIRS`); a step's pair
    /// product of several tokens 4 pairs (slot_eight_rows.wgsl, split by 32-weight chunks or by a
    /// quantized type's wide parts of 32 weights: eight_rows_chunks.wgsl, eight_rows_parts.wgsl).
    /// Slots of 4 and a one-token pair product's of 2 are forms for adapters that run a
    /// workgroup's threads as a CPU's SIMD lanes (`Offers::cpu_forms`), which load x lane by lane.
    #[serde(default = "one_a_slot", skip_serializing_if = "is_one_a_slot")]
    pub slot_size: u32,
    /// A split by block parts (on 8-bit x too) of a type with that form (`has_wide_form`) has each
    /// thread load vec4s of its part: the K-quants' blocks shared by 8 threads a vec4 each (two for
    /// Q6_K's quants and high bits) rather than 16 reading two or three words
    /// (shaders/dequant/q4_k_wide.wgsl, q6_k_wide.wgsl: fewer loads and half the header decodes a
    /// weight), F16's and BF16's runs of 32 by 2 threads two vec4s each rather than 4
    /// reading four words: 16 bytes a load in flight, as llama.cpp's matvecs read their blocks on
    /// GPUs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wide: bool,
}

/// How the threads of a row divide it (which shaders/row_dot*.wgsl file the kernel has).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// By 32-weight chunks, thread i taking chunks i, i + TPR, ... (row_dot.wgsl).
    #[default]
    Chunks,
    /// By whole blocks, each read by one thread that decodes its header once (row_dot_blocks.wgsl).
    /// For the types with a block form.
    Blocks,
    /// By whole blocks, each shared by threads reading neighbouring words (row_dot_parts.wgsl), as
    /// llama.cpp's matvecs split them: what a GPU's memory coalesces. 16 threads share a K-quant's
    /// 256-weight block, 4 a 32-weight block (`block_parts`); 16 threads a row or more.
    BlockParts,
    /// As `BlockParts`, with one token's x quantized to 8 bits in workgroup memory and each part
    /// multiplied by integer dot products (row_dot_q8.wgsl), as llama.cpp's integer matvecs: for
    /// the types that have that form (`has_int8_form`), where plans may round x (`Offers::int8_x`).
    PartsQ8,
}

/// What an adapter offers kernels beyond workgroup memory, as far as plans may use it: subgroups
/// (their fewest lanes) whose shuffles sum a row's threads, matrix cores for a prompt's products,
/// products on x rounded to 8 bits, and a prompt's tiles held in f16; and whether its candidates
/// include the forms for CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offers {
    pub subgroup_size: Option<u32>,
    pub matrix_cores: Option<MatrixCores>,
    pub int8_x: bool,
    /// A prompt's products in tiles held in f16 (`MatvecKernel::f16_tile`).
    pub f16_tiles: bool,
    /// The forms for adapters that run workgroups on a CPU, whose lanes load one at a time
    /// whatever they read: a thread a whole block (`Split::Blocks`), and the larger slots
    /// (`MatvecKernel::slot_size`: a step's four pairs of rows a slot, a one-token product's four
    /// rows or two pairs). On a GPU a whole block's thread reads 18 to 210 bytes apart from its
    /// neighbours, a transaction each, and neither that nor the eight rows won a shape on an H200
    /// (BENCHMARKS.md, 2026-12-04): left out there, they were a third to a half of a decode
    /// shape's candidates, and of its time to tune.
    pub cpu_forms: bool,
}

impl MatvecKernel {
    /// The shape unless tuned: workgroup memory, which every adapter has.
    pub fn default_for(cols: u32) -> MatvecKernel {
        MatvecKernel {
            workgroup: 64,
            threads_per_row: default_threads_per_row(cols),
            subgroup_sum: false,
            split: Split::Chunks,
            cooperative: None,
            coop_tile: CoopTile::Square,
            eight_tokens: false,
            f16_tile: false,
            slot_size: 1,
            wide: false,
        }
    }

    /// The matmul's tile of `workgroup` threads (`matmul_tile`).
    pub fn tile(workgroup: u32) -> MatvecKernel {
        MatvecKernel {
            workgroup,
            threads_per_row: 0,
            subgroup_sum: false,
            split: Split::Chunks,
            cooperative: None,
            coop_tile: CoopTile::Square,
            eight_tokens: false,
            f16_tile: false,
            slot_size: 1,
            wide: false,
        }
    }

    /// The matmul's `tile` on the adapter's matrix `cores`, a subgroup a block.
    pub fn on_matrix_cores(cores: MatrixCores, tile: CoopTile) -> MatvecKernel {
        MatvecKernel {
            workgroup: tile.workgroup(cores.size, cores.lanes),
            cooperative: Some(cores.size),
            coop_tile: tile,
            ..MatvecKernel::tile(64)
        }
    }

    /// The matmul's tile of `workgroup` threads held in f16 (`f16_tile`).
    pub fn f16_tile(workgroup: u32) -> MatvecKernel {
        MatvecKernel {
            f16_tile: true,
            ..MatvecKernel::tile(workgroup)
        }
    }

    /// The tile it multiplies, where it is a matmul's kernel not on the matrix cores.
    pub fn matmul_tile(&self) -> MatmulTile {
        matmul_tile(self.workgroup).in_f16(self.f16_tile)
    }

    /// Whether it rounds a product's weights and x to f16 on the way in (on the matrix cores, or a
    /// tile held in f16); its sums are f32 either way.
    pub fn rounds_to_f16(&self) -> bool {
        self.cooperative.is_some() || self.f16_tile
    }

    /// How it rounds beyond f32 products, where it does: plans that may not round so pass it over
    /// (`Gpu::usable`).
    pub fn rounding(&self) -> Option<Rounding> {
        if self.cooperative.is_some() {
            Some(Rounding::MatrixCores)
        } else if self.split == Split::PartsQ8 {
            Some(Rounding::Int8X)
        } else if self.f16_tile {
            Some(Rounding::F16Tiles)
        } else {
            None
        }
    }

    /// Whether it multiplies tiles of rows by tokens (a matmul's kernel) rather than rows.
    pub fn is_tile(&self) -> bool {
        self.threads_per_row == 0
    }
}

impl std::fmt::Display for MatvecKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        if let Some(size) = self.cooperative {
            let tile = self.coop_tile.tile();
            let (wg, rows, tokens) = (self.workgroup, tile.rows, tile.tokens);
            let ahead = if self.coop_tile.buffers() > 1 {
                " a step ahead"
            } else {
                ""
            };
            return write!(
                f,
                "wg{wg} tile {rows}x{tokens} matrix cores {size}x{size}{ahead}"
            );
        }
        if self.is_tile() {
            let tile = self.matmul_tile();
            let (wg, rows, tokens) = (self.workgroup, tile.rows, tile.tokens);
            let registers = if tile.shared { "" } else { " in registers" };
            let f16 = if tile.f16 { " f16" } else { "" };
            return write!(f, "wg{wg} tile {rows}x{tokens}{registers}{f16}");
        }
        let sum = if self.subgroup_sum {
            "subgroup"
        } else {
            "shared"
        };
        write!(f, "wg{} tpr{} {sum}", self.workgroup, self.threads_per_row)?;
        match self.split {
            Split::Chunks => {}
            Split::Blocks => write!(f, " blocks")?,
            Split::BlockParts => write!(f, " block-parts")?,
            Split::PartsQ8 => write!(f, " block-parts q8")?,
        }
        if self.eight_tokens {
            write!(f, " x8")?;
        }
        if self.slot_size > 1 {
            write!(f, " slot of {}", self.slot_size)?;
        }
        if self.wide {
            write!(f, " wide")?;
        }
        Ok(())
    }
}

/// A slot's size unless a tuning file names one: one row, or one pair.
fn one_a_slot() -> u32 {
    1
}

fn is_one_a_slot(size: &u32) -> bool {
    *size == 1
}

/// Threads per row unless tuned: enough to give each a 32-weight chunk or more, so short rows (576
/// weights in SmolLM2) do not leave most of a workgroup idle.
pub fn default_threads_per_row(cols: u32) -> u32 {
    let chunks = (cols / 32).max(1);
    (1u32 << chunks.ilog2()).min(64)
}

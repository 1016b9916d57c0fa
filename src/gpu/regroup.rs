//! The quantized 32-weight types' blocks and Q6_K's, regrouped on their way to the GPU so that every
//! word a kernel reads is aligned and a thread may read a block's quants a vec4 at a time.
//!
//! Q4_0's blocks are 18 bytes, Q5_0's 22, Q8_0's 34, Q6_K's 210 and MXFP4's 17: in the file, every
//! other block (every block but one in four, for MXFP4) starts off a word, and a kernel reading its
//! quants takes two loads and a shift for each word. Q4_1's (20 bytes) and Q5_1's (24) start on words
//! but put their quants 4 and 8 bytes past a 16-byte bound. Each of these blocks is a head (the f16
//! scale; Q4_1's scale and min; Q5_0's and Q5_1's 4 bytes of fifth bits too; MXFP4's exponent byte)
//! and a body of quants. The GPU's copy takes them in groups of 8 (16 for MXFP4's one-byte heads), the
//! group's heads first and the blocks' bodies after them, in order:
//!
//! ```text
//! file:  [h0 body0][h1 body1] ... [h7 body7]      GPU: [h0 h1 .. h7][body0][body1] ... [body7]
//! ```
//!
//! The heads take 16 bytes (Q4_1's 32, Q5_0's 48, Q5_1's 64), so every body (16 bytes, Q8_0's 32,
//! Q6_K's 208) lies on a 16-byte bound. A group has the bytes its blocks have, so a block keeps the
//! address `b` a kernel computes for it from the file's layout (its index times the block's bytes,
//! from a buffer's start), and its place in the group is `b / block bytes % blocks a group`
//! (shaders/dequant/regrouped.wgsl: `head_at`, `body_at`). Groups are counted from each buffer's
//! start; a buffer's last group may hold fewer blocks, its heads then partly unused, which the
//! buffer's padding (`gpu_bytes`) holds.

use crate::gguf::GgmlType;

/// How a type's blocks are regrouped (`of`): where a block's head lies in the file's block, its
/// length, and the blocks a group takes (the shaders' HEAD_BYTES and GROUP_BLOCKS:
/// `shader_constants`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regroup {
    block_bytes: usize,
    head_at: usize,
    head_bytes: usize,
    blocks: usize,
}

impl Regroup {
    /// The regrouping of `ty`'s blocks, or `None` for the float types, whose values are whole words
    /// 32 at a time, and Q4_K's and Q5_K's blocks, whose quants lie on 16-byte bounds already.
    pub fn of(ty: GgmlType) -> Option<Regroup> {
        let block_bytes = ty.block_bytes();
        let (head_at, head_bytes, blocks) = match ty {
            GgmlType::Q4_0 | GgmlType::Q8_0 => (0, 2, 8),
            // d and qh; d and m; d, m and qh.
            GgmlType::Q5_0 => (0, 6, 8),
            GgmlType::Q4_1 => (0, 4, 8),
            GgmlType::Q5_1 => (0, 8, 8),
            // d follows the quants and scales.
            GgmlType::Q6_K => (block_bytes - 2, 2, 8),
            GgmlType::MXFP4 => (0, 1, 16),
            _ => return None,
        };
        debug_assert_eq!((block_bytes - head_bytes) % 16, 0);
        Some(Regroup {
            block_bytes,
            head_at,
            head_bytes,
            blocks,
        })
    }

    /// The constants shaders/dequant/regrouped.wgsl reads a block's head and body by.
    pub fn shader_constants(&self) -> String {
        format!(
            "const HEAD_BYTES: u32 = {}u;\nconst GROUP_BLOCKS: u32 = {}u;\n",
            self.head_bytes, self.blocks
        )
    }

    /// Bytes of a group's heads.
    fn heads_bytes(&self) -> usize {
        self.blocks * self.head_bytes
    }

    /// Bytes of a whole group, in the file and on the GPU.
    pub fn group_bytes(&self) -> usize {
        self.blocks * self.block_bytes
    }

    /// Bytes on the GPU of `file_bytes` of whole blocks from a group's start: whole groups as in the
    /// file; a short last group takes its heads' room whole, and the total is whole words.
    pub fn gpu_bytes(&self, file_bytes: usize) -> usize {
        let (whole, short) = (
            file_bytes / self.group_bytes(),
            file_bytes % self.group_bytes(),
        );
        let blocks = short / self.block_bytes;
        let last = match blocks {
            0 => 0,
            n => self.heads_bytes() + n * (self.block_bytes - self.head_bytes),
        };
        (whole * self.group_bytes() + last).next_multiple_of(4)
    }

    /// `file` (whole blocks from the start of a group, the last group perhaps short) regrouped into
    /// `gpu`, which has room for `gpu_bytes(file.len())`.
    pub fn apply(&self, file: &[u8], gpu: &mut [u8]) {
        let (block, head) = (self.block_bytes, self.head_bytes);
        let body = block - head;
        assert_eq!(file.len() % block, 0, "whole blocks");
        assert!(gpu.len() >= self.gpu_bytes(file.len()));
        for (from, to) in file
            .chunks(self.group_bytes())
            .zip(gpu.chunks_mut(self.group_bytes()))
        {
            let n = from.len() / block;
            for (i, b) in from.chunks(block).enumerate() {
                let (h, rest) = (&b[self.head_at..self.head_at + head], &b[..self.head_at]);
                to[i * head..(i + 1) * head].copy_from_slice(h);
                // The body: the bytes around the head, in their order (the head is first or last).
                let tail = &b[self.head_at + head..];
                let at = self.heads_bytes() + i * body;
                to[at..at + rest.len()].copy_from_slice(rest);
                to[at + rest.len()..at + body].copy_from_slice(tail);
            }
            // A short group's unused heads.
            to[n * head..self.heads_bytes()].fill(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of `ty` whose bytes count up from `seed`, so that every byte says where it came from.
    fn blocks(ty: GgmlType, n: usize, seed: u8) -> Vec<u8> {
        (0..n * ty.block_bytes())
            .map(|i| seed.wrapping_add(i as u8))
            .collect()
    }

    fn regrouped(ty: GgmlType, file: &[u8]) -> Vec<u8> {
        let r = Regroup::of(ty).unwrap();
        let mut gpu = vec![0xaa; r.gpu_bytes(file.len())];
        r.apply(file, &mut gpu);
        gpu
    }

    #[test]
    fn q4_0_takes_eight_scales_into_the_first_16_bytes_and_a_short_group_pads_its_heads() {
        let file = blocks(GgmlType::Q4_0, 10, 0);
        let gpu = regrouped(GgmlType::Q4_0, &file);
        assert_eq!(gpu.len(), 144 + 16 + 2 * 16);
        for i in 0..8 {
            assert_eq!(gpu[2 * i..2 * i + 2], file[18 * i..18 * i + 2]);
            assert_eq!(gpu[16 + 16 * i..32 + 16 * i], file[18 * i + 2..18 * i + 18]);
        }
        // Blocks 8 and 9: a group of two, its heads' 16 bytes partly unused.
        assert_eq!(gpu[144..148], [file[144], file[145], file[162], file[163]]);
        assert_eq!(gpu[148..160], [0; 12]);
        assert_eq!(gpu[160..176], file[146..162]);
        assert_eq!(gpu[176..192], file[164..180]);
    }

    #[test]
    fn q6_k_takes_eight_scales_from_the_ends_of_its_blocks_and_keeps_bodies_on_16_byte_bounds() {
        let file: Vec<u8> = (0..210 * 10).map(|i| (i % 251) as u8).collect();
        let gpu = regrouped(GgmlType::Q6_K, &file);
        // A group of 8 and one of 2, whose 16 bytes of heads hold two.
        assert_eq!(gpu.len(), 1680 + 16 + 2 * 208);
        for i in 0..8 {
            assert_eq!(gpu[2 * i..2 * i + 2], file[210 * i + 208..210 * i + 210]);
            assert_eq!(
                gpu[16 + 208 * i..16 + 208 * (i + 1)],
                file[210 * i..210 * i + 208]
            );
        }
        let short = &gpu[1680..];
        assert_eq!(short[..4], [file[1888], file[1889], file[2098], file[2099]]);
        assert_eq!(short[4..16], [0; 12]);
        assert_eq!(short[16..224], file[1680..1888]);
        assert_eq!(short[224..432], file[1890..2098]);
    }

    #[test]
    fn q5_0_takes_its_scale_and_fifth_bits_as_its_head() {
        let file = blocks(GgmlType::Q5_0, 9, 7);
        let gpu = regrouped(GgmlType::Q5_0, &file);
        assert_eq!(gpu.len(), 176 + 48 + 16);
        for i in 0..8 {
            assert_eq!(gpu[6 * i..6 * i + 6], file[22 * i..22 * i + 6]);
            assert_eq!(gpu[48 + 16 * i..64 + 16 * i], file[22 * i + 6..22 * i + 22]);
        }
        assert_eq!(gpu[176..182], file[176..182]);
        assert_eq!(gpu[182..224], [0; 42]);
        assert_eq!(gpu[224..240], file[182..198]);
    }

    #[test]
    fn mxfp4_takes_sixteen_blocks_a_group() {
        let file = blocks(GgmlType::MXFP4, 17, 100);
        let gpu = regrouped(GgmlType::MXFP4, &file);
        assert_eq!(gpu.len(), 272 + 16 + 16);
        for i in 0..16 {
            assert_eq!(gpu[i], file[17 * i]);
            assert_eq!(gpu[16 + 16 * i..32 + 16 * i], file[17 * i + 1..17 * i + 17]);
        }
        assert_eq!(gpu[272], file[272]);
        assert_eq!(gpu[273..288], [0; 15]);
        assert_eq!(gpu[288..304], file[273..289]);
    }

    #[test]
    fn a_block_keeps_its_address_and_the_shaders_find_its_head_and_body_from_it() {
        for ty in GgmlType::ALL {
            let Some(r) = Regroup::of(ty) else {
                // The kernels take the float types' values 32 at a time (shaders/dequant).
                let kernel_block = ty.block_bytes() * (32 / ty.block_len()).max(1);
                assert_eq!(kernel_block % 16, 0, "{ty:?} needs no regrouping");
                continue;
            };
            let body = r.block_bytes - r.head_bytes;
            for g in 0..3 {
                let group = g * r.group_bytes();
                for i in 0..r.blocks {
                    // regrouped.wgsl's head_at and body_at.
                    let b = group + i * r.block_bytes;
                    let place = b / r.block_bytes % r.blocks;
                    let head = b - (r.block_bytes - r.head_bytes) * place;
                    let body_at = b - r.head_bytes * place + r.blocks * r.head_bytes;
                    assert_eq!(head, group + i * r.head_bytes, "{ty:?}");
                    assert_eq!(body_at, group + r.heads_bytes() + i * body, "{ty:?}");
                    assert_eq!(body_at % 16, 0, "{ty:?}: bodies on 16-byte bounds");
                }
            }
        }
    }
}

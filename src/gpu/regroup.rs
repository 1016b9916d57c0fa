//! Blocks whose size is not a multiple of four bytes, regrouped on their way to the GPU so that every
//! word a kernel reads is aligned.
//!
//! Q4_0's blocks are 18 bytes, Q5_0's 22, Q8_0's 34, Q6_K's 210 and MXFP4's 17: in the file, every
//! other block (every block but one in four, for MXFP4) starts off a word, and a kernel reading its
//! quants takes two loads and a shift for each word. Each of these blocks is a head of one or two
//! bytes (the f16 scale; MXFP4's exponent byte) and a body of whole words. The GPU's copy takes them
//! in groups of `4 / head bytes` blocks, the group's heads in its first word and the blocks' bodies
//! after it, in order:
//!
//! ```text
//! file:  [h0 body0][h1 body1]      GPU: [h0 h1][body0][body1]
//! ```
//!
//! A group has the bytes its blocks have, so a block keeps the address `b` a kernel computes for it
//! from the file's layout (its index times the block's bytes, from a buffer's start), and `b % 4` says
//! which of its group it is: block i of a group lies at i * (block bytes) from the group's start, which
//! is i * (head bytes) past a word. shaders/dequant/bytes.wgsl finds its head and body from there
//! (`head_at`, `body_at`). Groups are counted from each buffer's start; a buffer's last group may hold
//! fewer blocks, its heads' word then partly unused, which the buffer's padding to four bytes holds.

use crate::gguf::GgmlType;

/// How a type's blocks are regrouped (`of`): where a block's head lies in the file's block, and
/// its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regroup {
    block_bytes: usize,
    head_at: usize,
    head_bytes: usize,
}

impl Regroup {
    /// The regrouping of `ty`'s blocks, or `None` where they are whole words already.
    pub fn of(ty: GgmlType) -> Option<Regroup> {
        let block_bytes = ty.block_bytes();
        let (head_at, head_bytes) = match ty {
            GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 => (0, 2),
            // d follows the quants and scales.
            GgmlType::Q6_K => (block_bytes - 2, 2),
            GgmlType::MXFP4 => (0, 1),
            _ => return None,
        };
        debug_assert_eq!((block_bytes - head_bytes) % 4, 0);
        Some(Regroup {
            block_bytes,
            head_at,
            head_bytes,
        })
    }

    /// Blocks in a group: their heads fill one word.
    fn blocks(&self) -> usize {
        4 / self.head_bytes
    }

    /// Bytes of a whole group, in the file and on the GPU.
    pub fn group_bytes(&self) -> usize {
        self.blocks() * self.block_bytes
    }

    /// `file` (whole blocks from the start of a group, the last group perhaps short) regrouped into
    /// `gpu`, which has room for `file` rounded up to four bytes.
    pub fn apply(&self, file: &[u8], gpu: &mut [u8]) {
        let (block, head) = (self.block_bytes, self.head_bytes);
        let body = block - head;
        assert_eq!(file.len() % block, 0, "whole blocks");
        assert!(gpu.len() >= file.len().next_multiple_of(4));
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
                let at = 4 + i * body;
                to[at..at + rest.len()].copy_from_slice(rest);
                to[at + rest.len()..at + body].copy_from_slice(tail);
            }
            // A short group's unused heads.
            to[n * head..4].fill(0);
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
        let mut gpu = vec![0xaa; file.len().next_multiple_of(4)];
        Regroup::of(ty).unwrap().apply(file, &mut gpu);
        gpu
    }

    #[test]
    fn q4_0_pairs_put_both_scales_in_the_first_word() {
        let file = blocks(GgmlType::Q4_0, 2, 0);
        let gpu = regrouped(GgmlType::Q4_0, &file);
        let mut want = vec![0, 1, 18, 19];
        want.extend(2..18);
        want.extend(20..36);
        assert_eq!(gpu, want);
    }

    #[test]
    fn q6_k_takes_its_scale_from_the_end_of_each_block() {
        let file: Vec<u8> = (0..420).map(|i| (i % 251) as u8).collect();
        let gpu = regrouped(GgmlType::Q6_K, &file);
        assert_eq!(gpu[..4], [file[208], file[209], file[418], file[419]]);
        assert_eq!(gpu[4..212], file[..208]);
        assert_eq!(gpu[212..420], file[210..418]);
    }

    #[test]
    fn mxfp4_takes_four_blocks_a_group_and_a_short_last_group_pads_its_heads() {
        let file = blocks(GgmlType::MXFP4, 6, 100);
        let gpu = regrouped(GgmlType::MXFP4, &file);
        assert_eq!(gpu.len(), 104);
        assert_eq!(gpu[..4], [100, 117, 134, 151]);
        for i in 0..4 {
            assert_eq!(gpu[4 + 16 * i..20 + 16 * i], file[17 * i + 1..17 * i + 17]);
        }
        // Blocks 4 and 5: a group of two, its heads' word half used.
        assert_eq!(gpu[68..72], [file[68], file[85], 0, 0]);
        assert_eq!(gpu[72..88], file[69..85]);
        assert_eq!(gpu[88..104], file[86..102]);
    }

    #[test]
    fn a_block_keeps_its_address_and_its_place_in_the_group_is_its_address_mod_4() {
        for ty in GgmlType::ALL {
            let Some(r) = Regroup::of(ty) else {
                // The kernels take the float types' values 32 at a time (shaders/dequant).
                let kernel_block = ty.block_bytes() * (32 / ty.block_len()).max(1);
                assert_eq!(kernel_block % 4, 0, "{ty:?} needs no regrouping");
                continue;
            };
            for i in 0..r.blocks() {
                let b = i * r.block_bytes;
                assert_eq!((b % 4) / r.head_bytes, i, "{ty:?}");
                // bytes.wgsl's body_at and head_at.
                assert_eq!((b | 3) + 1, 4 + i * (r.block_bytes - r.head_bytes));
                let head = b - (b % 4 / r.head_bytes) * (r.block_bytes - r.head_bytes);
                assert_eq!(head, i * r.head_bytes);
            }
        }
    }
}

//! Kernel shapes per adapter: the workgroup size, threads per row and reduction each matvec shape runs
//! with, and the form of each prompt plan's recurrence (`Recurrence`) and attention
//! (`AttentionForm`). The defaults serve every
//! adapter; `Engine::tune` times the candidates on this one, and the winners, kept by the caller
//! (natively in a file), go to the next `Gpu` for the same adapter.

use super::attention_form::{AttentionForm, AttentionShape};
use super::matvec_kernel::MatvecKernel;
use super::matvec_shape::{Adapter, MatvecShape};
use super::recurrence::{Recurrence, RecurrenceShape};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Winners by shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tuning {
    /// The set of candidates the winners were timed among (`CANDIDATES`): kept winners of an older
    /// set are dropped (`Gpu::set_tuning`), so that their shapes are timed again among the new.
    #[serde(default)]
    pub candidates: u32,
    /// "TYPE COLSxROWS" (a matvec's weight type, row length and rows; then the store, for the kernels
    /// that take rows in pairs) to its kernel shape.
    pub matvec: BTreeMap<String, MatvecKernel>,
    /// "deltanet HEADSxDIM xTOKENS" (a prompt plan's Gated DeltaNet recurrence) to its form.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub recurrence: BTreeMap<String, Recurrence>,
    /// "attention HEADSxDIM kvKV_HEADS xTOKENS CACHE" (a prompt plan's attention), "... splitN
    /// CACHE" (a decode step's split over N) or "... splitN xTOKENS CACHE" (a step of several
    /// tokens split so) to its form.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attention: BTreeMap<String, AttentionForm>,
}

/// What the tuner chooses a kernel for: a matvec's shape, or a prompt plan's recurrence or
/// attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tunable {
    Matvec(MatvecShape),
    Recurrence(RecurrenceShape),
    Attention(AttentionShape),
}

/// A tunable's kernel: a matvec's kernel shape, or the recurrence's or attention's form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Choice {
    Matvec(MatvecKernel),
    Recurrence(Recurrence),
    Attention(AttentionForm),
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Choice::Matvec(k) => k.fmt(f),
            Choice::Recurrence(r) => r.fmt(f),
            Choice::Attention(a) => a.fmt(f),
        }
    }
}

impl Tunable {
    /// Its winner's name in a tuning.
    pub fn key(&self) -> String {
        match self {
            Tunable::Matvec(m) => m.key(),
            Tunable::Recurrence(r) => r.key(),
            Tunable::Attention(a) => a.key(),
        }
    }

    /// The work a dispatch of it does, roughly: the tuner times the largest first.
    pub fn size(&self) -> u64 {
        match self {
            Tunable::Matvec(m) => m.cols as u64 * m.rows as u64,
            Tunable::Recurrence(r) => r.heads as u64 * r.dim as u64 * r.dim as u64,
            Tunable::Attention(a) => {
                let (tokens, dim) = (a.tokens as u64, a.head_dim as u64);
                match a.splits {
                    Some(_) => a.heads as u64 * tokens * super::SPLIT_TIMED_AT as u64 * dim,
                    None => a.heads as u64 * tokens * tokens * dim / 2,
                }
            }
        }
    }

    /// The matvec's shape, where it is one.
    pub fn matvec(&self) -> Option<MatvecShape> {
        match self {
            Tunable::Matvec(shape) => Some(*shape),
            Tunable::Recurrence(_) | Tunable::Attention(_) => None,
        }
    }

    /// Whether it is a prompt's product in tiles (`Kernel::Matmul`, or `Kernel::MatmulId` over the
    /// experts).
    pub fn is_matmul(&self) -> bool {
        matches!(self, Tunable::Matvec(m) if m.is_tiled())
    }
}

/// The set of candidate kernel shapes, counted up when it changes (2: blocks shared by 16 threads;
/// 3: several tokens' products summed by subgroup shuffles, and split over 1 or 2 threads a row;
/// 4: 32-weight blocks shared by 4 threads; 5: a prompt's products tuned too, by their tile; 6: a
/// prompt's products on matrix cores; 7: a decode step's products on 8-bit x, Q6_K's and the
/// experts' among them, and a prompt's plain products in registers; 8: its experts' and grouped
/// products in registers too; 9: a step's pair products of several tokens as tiles; 10: those whose
/// x is normed on the way in too, and eight tokens a layer of workgroups; 11: a prompt's tiles held
/// in f16; 12: MXFP4's products on 8-bit x; 13: a prompt's products on matrix cores in a tall tile
/// too; 14: a prompt's attention on matrix cores, and its products there in a large tile; 15: Q4_K's
/// and Q5_K's blocks shared by 8 threads a vec4 each; 16: Q6_K's too, and the 32-weight types'
/// blocks whole a thread, a vec4 load each; 17: where workgroups run on a CPU, a one-token product's
/// slot of four rows or two pairs, and a step's of four pairs by wide parts). New shapes need no new
/// count: they have no winners to drop (a prompt's attention's forms came so).
pub const CANDIDATES: u32 = 17;

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            candidates: CANDIDATES,
            matvec: BTreeMap::new(),
            recurrence: BTreeMap::new(),
            attention: BTreeMap::new(),
        }
    }
}

impl Tuning {
    /// The kernel shape for a matvec shape on `adapter`: the winner, or the untuned kernel (also
    /// where a file's winner has a slot the shape has no form for).
    pub fn matvec(&self, shape: &MatvecShape, adapter: Adapter) -> MatvecKernel {
        (self.matvec.get(&shape.key()).copied())
            .filter(|kernel| shape.has_slot(kernel.slot_size))
            .unwrap_or(shape.untuned_kernel(adapter))
    }

    /// The form of a recurrence on `adapter`: the winner, or the default.
    pub fn recurrence(&self, shape: &RecurrenceShape, adapter: Adapter) -> Recurrence {
        let bytes = adapter.workgroup_bytes;
        (self.recurrence.get(&shape.key()).copied())
            .filter(|&form| shape.fits(form, bytes))
            .unwrap_or(shape.default_form(bytes))
    }

    /// The form of a prompt's attention on `adapter`: the winner, or the default.
    pub fn attention(&self, shape: &AttentionShape, adapter: Adapter) -> AttentionForm {
        (self.attention.get(&shape.key()).copied())
            .filter(|&form| shape.fits(form, adapter.workgroup_bytes))
            .unwrap_or(shape.default_form(adapter))
    }

    /// A tunable's kernel on `adapter`: the winner, or the default.
    pub fn choice(&self, tunable: &Tunable, adapter: Adapter) -> Choice {
        match tunable {
            Tunable::Matvec(m) => Choice::Matvec(self.matvec(m, adapter)),
            Tunable::Recurrence(r) => Choice::Recurrence(self.recurrence(r, adapter)),
            Tunable::Attention(a) => Choice::Attention(self.attention(a, adapter)),
        }
    }

    /// Whether the tunable has a winner.
    pub fn has(&self, tunable: &Tunable) -> bool {
        match tunable {
            Tunable::Matvec(m) => self.matvec.contains_key(&m.key()),
            Tunable::Recurrence(r) => self.recurrence.contains_key(&r.key()),
            Tunable::Attention(a) => self.attention.contains_key(&a.key()),
        }
    }

    /// How many shapes have winners.
    pub fn len(&self) -> usize {
        self.matvec.len() + self.recurrence.len() + self.attention.len()
    }

    /// Whether no shape has a winner.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `newer`'s winners, replacing any of the same shapes.
    pub fn extend(&mut self, newer: Tuning) {
        self.matvec.extend(newer.matvec);
        self.recurrence.extend(newer.recurrence);
        self.attention.extend(newer.attention);
    }

    /// Makes `choice` the tunable's winner.
    pub fn insert(&mut self, tunable: &Tunable, choice: Choice) {
        match (tunable, choice) {
            (Tunable::Matvec(m), Choice::Matvec(k)) => {
                self.matvec.insert(m.key(), k);
            }
            (Tunable::Recurrence(r), Choice::Recurrence(form)) => {
                self.recurrence.insert(r.key(), form);
            }
            (Tunable::Attention(a), Choice::Attention(form)) => {
                self.attention.insert(a.key(), form);
            }
            _ => panic!("{choice:?} is not a kernel of {tunable:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::GgmlType;
    use crate::gpu::{Activation, Kernel, Store, XNorm};

    /// A winner stands over the kernel the shape would take untuned.
    #[test]
    fn a_winner_stands() {
        let cpu = Adapter {
            workgroup_bytes: 32768,
            runs_on_cpu: true,
            split_workgroups: 256,
        };
        let plain = Kernel::Matmul(Store::Glu(Activation::Silu), XNorm::None);
        let chunk = MatvecShape::chunk(plain, GgmlType::Q4_K, (576, 1536), 1, 64);
        let mut tuning = Tuning::default();
        let tile = MatvecKernel {
            workgroup: 256,
            ..chunk.default_kernel()
        };
        tuning.insert(&Tunable::Matvec(chunk), Choice::Matvec(tile));
        assert_eq!(tuning.matvec(&chunk, cpu), tile, "a winner stands");
    }

    /// A file's winner whose slot the shape has no form for (a step's slot of two pairs, which
    /// only one token's product has) is passed over for the untuned kernel.
    #[test]
    fn a_winner_without_a_form_is_passed_over() {
        let cpu = Adapter {
            workgroup_bytes: 32768,
            runs_on_cpu: true,
            split_workgroups: 256,
        };
        let pairs = Kernel::MatvecPairs(Store::Rows, XNorm::None);
        let one = MatvecShape::of(pairs, GgmlType::Q4_K, 576, 1536);
        let step = one.in_step(4);
        let two_pairs = MatvecKernel {
            slot_size: 2,
            ..one.untuned_kernel(cpu)
        };
        let mut tuning = Tuning::default();
        for shape in [one, step] {
            tuning.insert(&Tunable::Matvec(shape), Choice::Matvec(two_pairs));
        }
        assert_eq!(tuning.matvec(&one, cpu), two_pairs);
        assert_eq!(tuning.matvec(&step, cpu), step.untuned_kernel(cpu));
        for shape in [one, step] {
            let three = MatvecKernel {
                slot_size: 3,
                ..two_pairs
            };
            tuning.insert(&Tunable::Matvec(shape), Choice::Matvec(three));
            assert_eq!(tuning.matvec(&shape, cpu), shape.untuned_kernel(cpu));
        }
    }
}

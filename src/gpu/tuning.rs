//! Kernel shapes per adapter: the workgroup size and threads per row each matvec shape runs with. The
//! defaults serve every adapter; `Engine::tune` times the candidates on this one, and the winners,
//! kept by the caller (natively in a file), go to the next `Gpu` for the same adapter.

use super::{Kernel, Store};
use crate::gguf::GgmlType;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Winners by shape.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tuning {
    /// "TYPE COLSxROWS" (a matvec's weight type, row length and rows; then the store, for the kernels
    /// that take rows in pairs) to [workgroup, threads per row].
    pub matvec: BTreeMap<String, [u32; 2]>,
}

/// What a matvec dispatch's shape is, for finding its winner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatvecShape {
    /// `Kernel::Matvec` or `Kernel::MatvecPairs`.
    pub kernel: Kernel,
    pub ty: GgmlType,
    pub cols: u32,
    pub rows: u32,
}

impl MatvecShape {
    pub fn key(&self) -> String {
        let shape = format!("{} {}x{}", self.ty, self.cols, self.rows);
        match self.kernel {
            Kernel::MatvecPairs(Store::Rows) => shape + " pairs",
            Kernel::MatvecPairs(Store::SwiGlu) => shape + " swiglu",
            Kernel::MatvecPairs(Store::RopeKv) => shape + " rope_kv",
            _ => shape,
        }
    }

    /// Rows one row slot (TPR threads) of the kernel computes.
    pub fn rows_per_slot(&self) -> u32 {
        match self.kernel {
            Kernel::MatvecPairs(_) => 2,
            _ => 1,
        }
    }

    pub fn default_threads_per_row(&self) -> u32 {
        default_threads_per_row(self.cols)
    }

    /// The candidates `Engine::tune` times: workgroups of 64 to 256 threads, 4 to 64 threads per row
    /// (no more than the row has 32-weight chunks).
    pub fn candidates(&self) -> Vec<[u32; 2]> {
        let most = self.default_threads_per_row();
        let mut c = vec![[64, most]]; // the default comes first
        for workgroup in [64, 128, 256] {
            for tpr in [4, 8, 16, 32, 64] {
                if tpr <= most && [workgroup, tpr] != c[0] {
                    c.push([workgroup, tpr]);
                }
            }
        }
        c
    }
}

/// Threads per row unless tuned: enough to give each a 32-weight chunk or more, so short rows (576
/// weights in SmolLM2) do not leave most of a workgroup idle.
pub fn default_threads_per_row(cols: u32) -> u32 {
    let chunks = (cols / 32).max(1);
    (1u32 << chunks.ilog2()).min(64)
}

impl Tuning {
    /// [workgroup, threads per row] for a matvec shape: the winner, or the default.
    pub fn matvec(&self, shape: &MatvecShape) -> [u32; 2] {
        self.matvec
            .get(&shape.key())
            .copied()
            .unwrap_or([64, shape.default_threads_per_row()])
    }
}

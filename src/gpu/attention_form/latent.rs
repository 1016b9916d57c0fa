//! Multi-head Latent Attention's forms (`AttentionShape::latent`): the streaming form over some
//! tokens a workgroup (shaders/mla_attention.wgsl) and the form on the matrix cores
//! (shaders/mla_attention_coop.wgsl), which tiles, how much workgroup memory each takes, and which
//! the tuner is offered.

use super::{Adapter, AttentionForm, AttentionShape, MatrixCores, Offers, MATRIX_SUBGROUPS};

/// Workgroup memory of Multi-head Latent Attention on the matrix cores over cache rows of `width`
/// in products of `size` over tiles of `keys` (shaders/mla_attention_coop.wgsl): the tile of f16
/// cache rows (at the start, the queries), each subgroup's part of the f32 scores, the f16 weights,
/// a factor a row, and the workgroup's range and flag.
pub const fn latent_matrix_bytes(width: u32, size: u32, keys: u32) -> u32 {
    let rows = if keys > size { keys } else { size };
    rows * (width + 8) * 2
        + MATRIX_SUBGROUPS * size * (keys + 4) * 4
        + size * (keys + 8) * 2
        + size * 4
        + 32
}

/// The widest latent (and value) Multi-head Latent Attention's streaming form takes
/// (shaders/mla_attention.wgsl): 4 values for each of its 128 threads.
pub const MAX_LATENT: u32 = 512;

/// The most tokens of a prompt's chunk a workgroup of Multi-head Latent Attention's streaming form
/// takes at once (TQ in shaders/attend.wgsl), each cache row read once for them: as many as the
/// adapter's workgroup memory holds the queries of (10 KiB a token for a group of 4 heads, and 2 KiB
/// of attend.wgsl's block), up to 4: on WebGPU's 16 KiB one, on 32 KiB (lavapipe) two, on 48 KiB
/// (NVIDIA's Vulkan) four.
pub fn largest_query_tile(workgroup_bytes: u32) -> u32 {
    // A head's query is a whole cache row at most: the latent and 128 rope values, in vec4s.
    const QUERY_VEC4S: u32 = (MAX_LATENT + 128) / 4;
    const PER_TOKEN: u32 = (4 * QUERY_VEC4S + 128) * 16;
    (workgroup_bytes / PER_TOKEN).clamp(1, 4)
}

impl AttentionShape {
    /// Its form unless tuned on `adapter`: a split step's a token a workgroup; a chunk's as many
    /// tokens a workgroup as the adapter's workgroup memory holds the queries of, or one where
    /// workgroups run on the CPU: there the tile's queries cost arithmetic that reading each row once
    /// does not pay back (on lavapipe two tokens a workgroup took the attention of a 64-token chunk
    /// at depth 1024 from 4.6 to 7.1 s, BENCHMARKS.md).
    pub(super) fn latent_default_form(&self, adapter: Adapter) -> AttentionForm {
        let tokens = match self.splits.is_none() && !adapter.runs_on_cpu {
            true => largest_query_tile(adapter.workgroup_bytes),
            false => 1,
        };
        AttentionForm::Latent { tokens }
    }

    /// Multi-head Latent Attention's forms: a chunk's 1 to `largest_query_tile` tokens a workgroup
    /// on GPUs (where workgroups run on the CPU, one: the tuner times a chunk near the start of a
    /// context, where two took less, and deep into one two cost half again as much,
    /// `default_form`), a split step's one; and on the matrix cores tiles of `size` or twice as many
    /// keys where they fit.
    pub(super) fn latent_candidates(&self, offers: Offers, adapter: Adapter) -> Vec<AttentionForm> {
        let default = self.default_form(adapter);
        let most = match self.splits.is_none() && !offers.cpu_forms {
            true => largest_query_tile(adapter.workgroup_bytes),
            false => 1,
        };
        let tokens = (1..=most).map(|tokens| AttentionForm::Latent { tokens });
        let on_cores = (offers.matrix_cores.into_iter()).flat_map(|MatrixCores { lanes, size }| {
            [1, 2].map(|k| AttentionForm::LatentMatrix {
                size,
                lanes,
                keys: k * size,
            })
        });
        let others = tokens.chain(on_cores).filter(|&f| f != default);
        let forms = [default].into_iter().chain(others);
        forms
            .filter(|&f| self.fits(f, adapter.workgroup_bytes))
            .collect()
    }

    /// Whether an adapter whose workgroups hold `workgroup_bytes` can run the shape, of a latent
    /// `latent` wide, in `form`: its own forms alone.
    pub(super) fn latent_fits(
        &self,
        latent: u32,
        form: AttentionForm,
        workgroup_bytes: u32,
    ) -> bool {
        let d = self.head_dim;
        match form {
            AttentionForm::Latent { tokens } => match self.splits {
                None => (1..=largest_query_tile(workgroup_bytes)).contains(&tokens),
                Some(_) => tokens == 1,
            },
            // Keys and values of whole matrices; a thread a query row for the softmax.
            AttentionForm::LatentMatrix { size, lanes, keys } => {
                d.is_multiple_of(size)
                    && latent.is_multiple_of(size)
                    && d.is_multiple_of(4)
                    && keys.is_multiple_of(size)
                    && lanes >= size
                    && latent_matrix_bytes(d, size, keys) <= workgroup_bytes
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{offers, on_gpu};
    use super::super::KvType;
    use super::*;

    /// Multi-head Latent Attention's chunk takes its own forms alone: the streaming form at 1 to
    /// as many tokens as the adapter's workgroup memory holds the queries of on a GPU (the untuned
    /// default as many; one where workgroups run on the CPU, which is offered no other), and on the
    /// matrix cores tiles of one or two products' keys where they fit (DeepSeek-V2's 576-wide rows:
    /// 32 keys take 47 KiB).
    #[test]
    fn latent_forms_are_offered_for_latent_attention_alone() {
        let deepseek = AttentionShape {
            heads: 16,
            kv_heads: 1,
            head_dim: 576,
            tokens: 512,
            cache: KvType::F32,
            splits: None,
            latent: Some(512),
        };
        let nvidia = Some(MatrixCores {
            lanes: 32,
            size: 16,
        });
        let latent = |tokens| AttentionForm::Latent { tokens };
        let matrix = |keys| AttentionForm::LatentMatrix {
            size: 16,
            lanes: 32,
            keys,
        };
        assert_eq!(
            deepseek.candidates(offers(Some(32), nvidia), on_gpu(49152)),
            [
                latent(4),
                latent(1),
                latent(2),
                latent(3),
                matrix(16),
                matrix(32)
            ]
        );
        assert_eq!(
            deepseek.candidates(offers(Some(32), nvidia), on_gpu(32768)),
            [latent(2), latent(1), matrix(16)],
            "32 keys take 47 KiB"
        );
        let cpu = Adapter {
            runs_on_cpu: true,
            ..on_gpu(32768)
        };
        let cpu_offers = Offers {
            cpu_forms: true,
            ..offers(Some(8), None)
        };
        assert_eq!(deepseek.candidates(cpu_offers, cpu), [latent(1)]);
        assert_eq!(deepseek.default_form(on_gpu(16384)), latent(1));
        // Not the forms of heads of keys and values, nor theirs of it.
        let heads = AttentionShape {
            latent: None,
            ..deepseek
        };
        assert!(!heads.fits(latent(1), 49152) && !heads.fits(matrix(16), 49152));
        assert!(!deepseek.fits(AttentionForm::Query, 49152));
        assert_ne!(heads.key(), deepseek.key());
        assert_eq!(latent_matrix_bytes(576, 16, 32), 47968);
    }
}

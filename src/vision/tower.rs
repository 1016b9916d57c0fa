//! What every vision tower's file says the same way: its patches, widths, heads and layers, its
//! norms' epsilon, its MLP's activation and how its pixels are normalized; and the checks of them
//! that the kernels need.

use crate::gpu::GpuTensor;
use crate::models::{Loader, Meta};
use crate::ops::glu::Activation;
use crate::Error;

#[derive(Clone, Debug)]
pub struct Tower {
    pub patch_size: u32,
    pub n_embd: u32,
    pub n_ff: u32,
    pub n_layer: u32,
    pub n_head: u32,
    pub eps: f32,
    /// The MLP's activation.
    pub activation: Activation,
    pub mean: [f32; 3],
    pub std: [f32; 3],
}

impl Tower {
    pub fn from_meta(m: &Meta) -> Result<Tower, Error> {
        let t = Tower {
            patch_size: m.meta_u32("vision.patch_size")?,
            n_embd: m.meta_u32("vision.embedding_length")?,
            n_ff: m.meta_u32("vision.feed_forward_length")?,
            n_layer: m.meta_u32("vision.block_count")?,
            n_head: m.meta_u32("vision.attention.head_count")?,
            eps: m.meta_f32_or("vision.attention.layer_norm_epsilon", 1e-6)?,
            activation: activation(m)?,
            mean: channel_values(m, "image_mean")?,
            std: channel_values(m, "image_std")?,
        };
        if t.patch_size == 0 || t.n_layer == 0 {
            return Err(Error::Model(
                "vision projector: patches and layers must not be empty".into(),
            ));
        }
        Ok(t)
    }

    /// Values of a patch's row as the patch embedding reads it: its pixels' three channels, padded to
    /// whole 32-weight blocks.
    pub fn patch_len(&self) -> u32 {
        (3 * self.patch_size * self.patch_size).next_multiple_of(32)
    }

    /// The patch embedding (v.patch_embd.weight, a p x p x 3 kernel per output) as a matrix whose
    /// rows are the patches' padded rows (`patch_len`).
    pub async fn patch_embedding(&self, l: &mut Loader<'_>) -> Result<GpuTensor, Error> {
        let (p, d) = (self.patch_size, self.n_embd);
        let dims = [p, p, 3, d];
        super::weights::padded(l, "v.patch_embd.weight", &dims, self.patch_len(), d).await
    }

    /// The MLP's width padded to whole 32-weight blocks, as the kernels take it.
    pub fn n_ff_padded(&self) -> u32 {
        self.n_ff.next_multiple_of(32)
    }

    /// Checks what the kernels need of the widths: the heads splitting the tower's width into heads
    /// a multiple of 4 wide and at most attention's widest, and it and the text model's width
    /// `n_embd_text` multiples of 32.
    pub fn check_widths(&self, n_embd_text: u32) -> Result<(), Error> {
        let (n_embd, n_head) = (self.n_embd, self.n_head);
        let widest = crate::ops::attention::MAX_HEAD_DIM;
        let head_dim = n_embd / n_head.max(1);
        if n_head == 0
            || !n_embd.is_multiple_of(n_head)
            || !head_dim.is_multiple_of(4)
            || head_dim > widest
        {
            return Err(Error::Model(format!(
                "vision projector: {n_head} heads do not split a width of {n_embd} into heads a multiple of 4 wide, at most {widest}"
            )));
        }
        if !n_embd.is_multiple_of(32) || !n_embd_text.is_multiple_of(32) {
            return Err(Error::Model(format!(
                "vision projector: widths of {n_embd} and {n_embd_text} are not multiples of 32"
            )));
        }
        Ok(())
    }
}

/// The MLP's activation as llama.cpp reads it from the file: clip.use_gelu (GELU, tanh), clip.use_silu,
/// or where the file names neither, GELU's quick approximation.
fn activation(m: &Meta) -> Result<Activation, Error> {
    match (
        m.meta_bool_or("use_gelu", false)?,
        m.meta_bool_or("use_silu", false)?,
    ) {
        (true, true) => Err(Error::Model(
            "vision projector: both clip.use_gelu and clip.use_silu are set".into(),
        )),
        (true, false) => Ok(Activation::GeluTanh),
        (false, true) => Ok(Activation::Silu),
        (false, false) => Ok(Activation::GeluQuick),
    }
}

/// Three values, one for each colour channel, of the metadata clip.vision.`key`.
fn channel_values(m: &Meta, key: &str) -> Result<[f32; 3], Error> {
    let full = format!("clip.vision.{key}");
    let values = m.header.get(&full).and_then(|v| v.as_array()).map(|a| {
        a.iter()
            .filter_map(|v| v.as_f64().map(|f| f as f32))
            .collect::<Vec<_>>()
    });
    match values {
        Some(v) if v.len() == 3 => Ok([v[0], v[1], v[2]]),
        _ => Err(Error::Model(format!(
            "vision projector: metadata {full}: not three numbers"
        ))),
    }
}

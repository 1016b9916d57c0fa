//! The dense block's other kind of layer: Gated DeltaNet linear attention (Qwen3.5's recurrent layers),
//! which keeps a fixed-size state per layer instead of a KV cache. Its weights, named as llama.cpp's
//! files name them, its states, and its dispatches (ops/delta_net.rs says what they compute).

use super::Loader;
use crate::gpu::{scratch_buffer, GpuTensor, Plan, Stacked};
use crate::ops::delta_net::{self, Shape};
use crate::ops::matvec::{self, Input};
use crate::Error;

/// One linear-attention layer's weights and states.
pub struct DeltaNet {
    /// attn_qkv, attn_gate, ssm_beta, ssm_alpha: (Shape::row_len, n_embd), one row of outputs per
    /// token: the conv channels, z, beta's and alpha's logits.
    in_proj: Stacked,
    conv: wgpu::Buffer,       // ssm_conv1d: (conv channels, conv_kernel)
    gates: wgpu::Buffer,      // ssm_a, ssm_dt.bias: (2, n_v_heads)
    norm: wgpu::Buffer,       // ssm_norm: (dim)
    pub ssm_out: GpuTensor,   // (n_embd, value_dim)
    conv_state: wgpu::Buffer, // (conv channels, conv_kernel - 1)
    state: wgpu::Buffer,      // (n_v_heads, dim, dim)
}

/// Checks that the adapter can run layers of this shape, naming what it cannot.
pub fn check(shape: Shape, max_binding: u64) -> Result<(), Error> {
    let Shape {
        n_k_heads,
        n_v_heads,
        dim,
        conv_kernel,
    } = shape;
    if n_k_heads == 0 || n_v_heads % n_k_heads != 0 {
        return Err(Error::Model(format!(
            "{n_v_heads} linear-attention value heads cannot share {n_k_heads} key heads (ssm.time_step_rank, ssm.group_count)"
        )));
    }
    if !dim.is_power_of_two() || !(4..=delta_net::MAX_DIM).contains(&dim) {
        return Err(Error::Model(format!(
            "linear-attention heads of {dim} dimensions (ssm.state_size) are not supported: a power of two from 4 to {}",
            delta_net::MAX_DIM
        )));
    }
    if !(1..=delta_net::MAX_CONV_KERNEL).contains(&conv_kernel) {
        return Err(Error::Model(format!(
            "a convolution of {conv_kernel} taps (ssm.conv_kernel) is not supported: 1 to {}",
            delta_net::MAX_CONV_KERNEL
        )));
    }
    let state_bytes = shape.state_len() * 4;
    if state_bytes > max_binding {
        return Err(Error::Model(format!(
            "a linear-attention layer's state of {state_bytes} bytes ({n_v_heads} heads of {dim} x {dim}) exceeds the adapter's largest binding ({max_binding} bytes)"
        )));
    }
    Ok(())
}

impl DeltaNet {
    /// Layer `i`'s weights, checked against `shape`, and its states, zeroed.
    pub async fn load(
        l: &mut Loader<'_>,
        i: u32,
        shape: Shape,
        n_embd: u32,
    ) -> Result<DeltaNet, Error> {
        let name = |t: &str| format!("blk.{i}.{t}");
        let n_v = shape.n_v_heads;
        let in_proj = l
            .stacked(
                &[
                    name("attn_qkv.weight"),
                    name("attn_gate.weight"),
                    name("ssm_beta.weight"),
                    name("ssm_alpha.weight"),
                ],
                n_embd,
                &[shape.conv_channels(), shape.value_dim(), n_v, n_v],
            )
            .await?;
        let conv_name = name("ssm_conv1d.weight");
        let conv_shape = [shape.conv_kernel, shape.conv_channels()];
        let conv_len = (shape.conv_kernel * shape.conv_channels()) as usize;
        let conv = l
            .floats("ssm_conv1d", &[(&conv_name, &conv_shape)], conv_len, |r| {
                r.concat()
            })
            .await?;
        let gate_names = [name("ssm_a"), name("ssm_dt.bias")];
        let n = [n_v];
        let gate_tensors = [(gate_names[0].as_str(), &n[..]), (&gate_names[1], &n[..])];
        let gates = l
            .floats("ssm_a + ssm_dt", &gate_tensors, 2 * n_v as usize, |r| {
                r.concat()
            })
            .await?;
        let gpu = l.gpu.clone();
        let floats = |n: u64| (n * 4).max(4);
        Ok(DeltaNet {
            in_proj,
            conv,
            gates,
            norm: l.vector(&name("ssm_norm.weight"), shape.dim).await?,
            ssm_out: l
                .matrix(&name("ssm_out.weight"), shape.value_dim(), n_embd)
                .await?,
            conv_state: scratch_buffer(
                &gpu,
                &name("conv_state"),
                floats(shape.conv_state_len() as u64),
            )
            .await?,
            state: scratch_buffer(&gpu, &name("state"), floats(shape.state_len())).await?,
        })
    }

    /// The buffers that carry the sequence from one run to the next.
    pub fn states(&self) -> [&wgpu::Buffer; 2] {
        [&self.conv_state, &self.state]
    }

    /// The projection of the layer's input `x` (batch, n_embd; normed on the way in where the plan
    /// folds norms into products) into `rows` (batch, Shape::row_len), then the convolution and the
    /// recurrence into `out` (batch, value_dim); ssm_out is the caller's.
    pub fn push(
        &self,
        plan: &mut Plan,
        shape: Shape,
        (x, rows, out): (Input, &wgpu::Buffer, &wgpu::Buffer),
        eps: f32,
    ) {
        matvec::push_stacked(plan, &self.in_proj, x, rows);
        let buffers = delta_net::Buffers {
            rows,
            conv: &self.conv,
            conv_state: &self.conv_state,
            state: &self.state,
            gates: &self.gates,
            norm: &self.norm,
            out,
        };
        delta_net::push(plan, shape, &buffers, eps);
    }
}

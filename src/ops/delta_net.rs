//! Gated DeltaNet, the linear attention of Qwen3.5's recurrent layers: the causal convolution over the
//! input projection's q, k and v channels (shaders/delta_conv.wgsl), then the gated delta rule over each
//! value head's state, token by token in a step (shaders/delta_net.wgsl) and in chunks of tokens in a
//! prompt (shaders/delta_net_chunks.wgsl), with plain CPU references of both.
//!
//! A layer's input projection writes one row per token: the conv channels (q of every key head, k of
//! every key head, v of every value head), then z (the read-out's gate, per value head), then beta's and
//! alpha's logits (one per value head). The convolution rewrites the channels in place; the recurrence
//! reads the row and writes each value head's gated read-out.

use crate::gpu::{Kernel, PipelineKey, Plan};

/// A Gated DeltaNet layer's dimensions, from the ssm.* metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Key heads (ssm.group_count); value heads share them in turn.
    pub n_k_heads: u32,
    /// Value heads (ssm.time_step_rank), each with its own state.
    pub n_v_heads: u32,
    /// Dimensions of a key head and of a value head (ssm.state_size).
    pub dim: u32,
    /// Taps of the convolution (ssm.conv_kernel).
    pub conv_kernel: u32,
}

/// The taps the convolution kernel holds in registers.
pub const MAX_CONV_KERNEL: u32 = 8;
/// Head dimensions the recurrence takes: a power of two, a thread per column, up to this.
pub const MAX_DIM: u32 = 256;

impl Shape {
    /// Channels the convolution runs over: q and k of every key head, v of every value head.
    pub fn conv_channels(&self) -> u32 {
        (2 * self.n_k_heads + self.n_v_heads) * self.dim
    }

    /// Values of the read-out: a head of `dim` per value head (ssm.inner_size).
    pub fn value_dim(&self) -> u32 {
        self.n_v_heads * self.dim
    }

    /// Values per row of the input projection: the channels, z, beta and alpha.
    pub fn row_len(&self) -> u32 {
        self.conv_channels() + self.value_dim() + 2 * self.n_v_heads
    }

    /// Floats of the convolution's rolling state.
    pub fn conv_state_len(&self) -> u32 {
        self.conv_channels() * (self.conv_kernel - 1)
    }

    /// Floats of the recurrent states: a dim x dim matrix per value head.
    pub fn state_len(&self) -> u64 {
        self.n_v_heads as u64 * self.dim as u64 * self.dim as u64
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ConvParams {
    channels: u32,
    row_len: u32,
    kernel: u32,
    pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct NetParams {
    n_k_heads: u32,
    n_v_heads: u32,
    dim: u32,
    row_len: u32,
    z_at: u32,
    beta_at: u32,
    alpha_at: u32,
    eps: f32,
}

/// The buffers one layer's recurrence works on.
pub struct Buffers<'a> {
    /// (batch, row_len) the input projection's rows: convolved in place, then read.
    pub rows: &'a wgpu::Buffer,
    /// (channels, conv_kernel) ssm_conv1d, oldest tap first.
    pub conv: &'a wgpu::Buffer,
    /// (channels, conv_kernel - 1) the last inputs of each channel.
    pub conv_state: &'a wgpu::Buffer,
    /// (n_v_heads, dim, dim) each value head's state, S[h][i][j] with i over the key's dimensions.
    pub state: &'a wgpu::Buffer,
    /// (2, n_v_heads) ssm_a (-exp(A_log)), then ssm_dt.bias.
    pub gates: &'a wgpu::Buffer,
    /// (dim) ssm_norm.
    pub norm: &'a wgpu::Buffer,
    /// (batch, n_v_heads * dim) the gated read-out.
    pub out: &'a wgpu::Buffer,
}

/// How the recurrence walks a run's tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recurrence {
    /// One token after another (shaders/delta_net.wgsl): a decode step's form.
    Tokens,
    /// In chunks of this many tokens, each chunk's updates as small matrix products
    /// (shaders/delta_net_chunks.wgsl): a prompt's form.
    Chunks(u32),
}

/// Chunk sizes the chunked recurrence is built for, largest first.
pub const CHUNK_SIZES: [u32; 3] = [16, 8, 4];

/// Workgroup memory the chunked recurrence takes for chunks of `chunk` tokens of heads of `dim`:
/// q's and k's tiles, the two chunk x chunk products, and six values a token.
pub fn chunk_bytes(dim: u32, chunk: u32) -> u32 {
    4 * (2 * chunk * dim + 2 * chunk * chunk + 6 * chunk)
}

/// The largest chunk whose tiles the adapter's workgroup memory holds and whose head has the
/// threads it needs (four a token of the chunk); None where no chunk fits.
pub fn chunk_tokens(dim: u32, workgroup_bytes: u32) -> Option<u32> {
    CHUNK_SIZES
        .into_iter()
        .find(|&c| dim >= 4 * c && chunk_bytes(dim, c) <= workgroup_bytes)
}

/// How a plan's runs take the recurrence: a step's few tokens one by one, a prompt's chunk in
/// chunks where the adapter holds their tiles.
pub fn recurrence_for(plan: &Plan, dim: u32) -> Recurrence {
    match chunk_tokens(dim, plan.workgroup_bytes) {
        Some(chunk) if !plan.is_step() => Recurrence::Chunks(chunk),
        _ => Recurrence::Tokens,
    }
}

/// Adds the convolution and the recurrence for each token of the run, in order. A run at position 0
/// starts from empty states; any other continues from the states the previous run left.
pub fn push(plan: &mut Plan, s: Shape, b: &Buffers, eps: f32) {
    let recurrence = recurrence_for(plan, s.dim);
    push_with(plan, s, b, eps, recurrence);
}

/// `push` with the recurrence's form chosen by the caller.
pub fn push_with(plan: &mut Plan, s: Shape, b: &Buffers, eps: f32, recurrence: Recurrence) {
    assert!(s.dim.is_power_of_two() && s.dim <= MAX_DIM && s.dim >= 4);
    assert!((1..=MAX_CONV_KERNEL).contains(&s.conv_kernel));
    assert!(s.n_v_heads.is_multiple_of(s.n_k_heads));
    let step = plan.step.clone();
    let conv = ConvParams {
        channels: s.conv_channels(),
        row_len: s.row_len(),
        kernel: s.conv_kernel,
        pad: 0,
    };
    plan.push(
        PipelineKey::new(Kernel::DeltaConv, None),
        &[b.rows, b.conv, b.conv_state, &step],
        super::params(&conv),
        [s.conv_channels().div_ceil(64), 1, 1],
    );
    let net = NetParams {
        n_k_heads: s.n_k_heads,
        n_v_heads: s.n_v_heads,
        dim: s.dim,
        row_len: s.row_len(),
        z_at: s.conv_channels(),
        beta_at: s.conv_channels() + s.value_dim(),
        alpha_at: s.conv_channels() + s.value_dim() + s.n_v_heads,
        eps,
    };
    let key = match recurrence {
        Recurrence::Tokens => PipelineKey {
            workgroup: s.dim,
            ..PipelineKey::new(Kernel::DeltaNet, None)
        },
        Recurrence::Chunks(chunk) => {
            assert!(s.dim >= 4 * chunk && chunk_bytes(s.dim, chunk) <= plan.workgroup_bytes);
            PipelineKey {
                workgroup: s.dim,
                tokens: Some(chunk),
                ..PipelineKey::new(Kernel::DeltaNetChunks, None)
            }
        }
    };
    plan.push(
        key,
        &[b.rows, b.state, b.gates, b.norm, b.out, &step],
        super::params(&net),
        [s.n_v_heads, 1, 1],
    );
}

/// CPU reference of one layer's states: what a sequence has left in them.
#[derive(Clone, Debug)]
pub struct State {
    /// (channels, conv_kernel - 1)
    pub conv: Vec<f32>,
    /// (n_v_heads, dim, dim), S[h][i][j]
    pub s: Vec<f32>,
}

impl State {
    pub fn new(shape: Shape) -> State {
        State {
            conv: vec![0.0; shape.conv_state_len() as usize],
            s: vec![0.0; shape.state_len() as usize],
        }
    }
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

fn softplus(x: f32) -> f32 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// CPU reference: one token's row of the input projection (`Shape::row_len` values) through the
/// convolution and the recurrence, updating `state`; returns the gated read-out (n_v_heads * dim).
/// conv: (channels, conv_kernel); gates: a then dt_bias per value head; norm: (dim).
pub fn reference(
    s: Shape,
    row: &[f32],
    state: &mut State,
    (conv, gates, norm): (&[f32], &[f32], &[f32]),
    eps: f32,
) -> Vec<f32> {
    let (n, taps) = (s.dim as usize, s.conv_kernel as usize);
    let held = taps - 1;
    let channels = s.conv_channels() as usize;
    let mut x = row.to_vec();
    for c in 0..channels {
        let past = &mut state.conv[c * held..(c + 1) * held];
        let w = &conv[c * taps..(c + 1) * taps];
        let acc = w[held] * row[c] + past.iter().zip(w).map(|(p, w)| p * w).sum::<f32>();
        if held > 0 {
            past.rotate_left(1);
            past[held - 1] = row[c];
        }
        x[c] = silu(acc);
    }
    let (n_k, n_v) = (s.n_k_heads as usize, s.n_v_heads as usize);
    let l2 = |v: &[f32]| {
        let scale = 1.0 / (v.iter().map(|x| x * x).sum::<f32>() + eps).sqrt();
        v.iter().map(|x| x * scale).collect::<Vec<f32>>()
    };
    let mut out = vec![0.0; n_v * n];
    for h in 0..n_v {
        let kh = h % n_k;
        let q: Vec<f32> = l2(&x[kh * n..(kh + 1) * n])
            .iter()
            .map(|v| v / (n as f32).sqrt())
            .collect();
        let k = l2(&x[(n_k + kh) * n..(n_k + kh + 1) * n]);
        let v = &x[(2 * n_k + h) * n..(2 * n_k + h + 1) * n];
        let z_at = channels + h * n;
        let beta = 1.0 / (1.0 + (-x[channels + n_v * n + h]).exp());
        let decay = (softplus(x[channels + n_v * n + n_v + h] + gates[n_v + h]) * gates[h]).exp();
        let st = &mut state.s[h * n * n..(h + 1) * n * n];
        let mut o = vec![0.0f32; n];
        for j in 0..n {
            let sk: f32 = (0..n).map(|i| st[i * n + j] * k[i]).sum();
            let d = (v[j] - decay * sk) * beta;
            for i in 0..n {
                st[i * n + j] = decay * st[i * n + j] + k[i] * d;
                o[j] += st[i * n + j] * q[i];
            }
        }
        let scale = 1.0 / (o.iter().map(|x| x * x).sum::<f32>() / n as f32 + eps).sqrt();
        for j in 0..n {
            out[h * n + j] = o[j] * scale * norm[j] * silu(x[z_at + j]);
        }
    }
    out
}

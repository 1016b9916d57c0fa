//! Gated DeltaNet, the linear attention of Qwen3.5's recurrent layers: the causal convolution over the
//! input projection's q, k and v channels (shaders/delta_conv.wgsl), then the gated delta rule over each
//! value head's state, token by token in a step (shaders/delta_net.wgsl) and in chunks of tokens in a
//! prompt (shaders/delta_net_chunks.wgsl), with plain CPU references of both.
//!
//! A layer's input projection writes one row per token: the conv channels (q of every key head, k of
//! every key head, v of every value head), then z (the read-out's gate, per value head), then beta's and
//! alpha's logits (one per value head). The convolution rewrites the channels in place; the recurrence
//! reads the row and writes each value head's gated read-out. A step's few tokens take both in one
//! dispatch: the recurrence convolves its q, k and v on the way in (shaders/delta_inputs_conv.wgsl).

use crate::gpu::{Kernel, PipelineKey, Plan, Recurrence, RecurrenceShape};

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

    /// Floats of the convolution's rolling state: each value head's copy of its channels' last
    /// inputs (its key head's q and k, its own v), so that a step's recurrence, which convolves them
    /// itself, reads and writes only its own head's.
    pub fn conv_state_len(&self) -> u32 {
        self.n_v_heads * 3 * self.dim * (self.conv_kernel - 1)
    }

    /// Channel c's last inputs from the convolution's state (`conv_state_len` floats) in the CPU
    /// reference's layout, (channels, conv_kernel - 1), and whether every value head's copy agrees.
    pub fn conv_state_by_channel(&self, state: &[f32]) -> (Vec<f32>, bool) {
        let (n, held) = (self.dim as usize, (self.conv_kernel - 1) as usize);
        let (n_k, n_v) = (self.n_k_heads as usize, self.n_v_heads as usize);
        let at = |h: usize, part: usize, i: usize| ((h * 3 + part) * n + i) * held;
        let mut by_channel = Vec::with_capacity(self.conv_channels() as usize * held);
        let mut agree = true;
        for c in 0..self.conv_channels() as usize {
            let (head, i) = (c / n, c % n);
            // The value heads holding the channel: each one reading the key head, or the v's own.
            let (part, holders): (usize, Vec<usize>) = match head < 2 * n_k {
                true => (head / n_k, (head % n_k..n_v).step_by(n_k).collect()),
                false => (2, vec![head - 2 * n_k]),
            };
            let first = &state[at(holders[0], part, i)..][..held];
            agree &= holders
                .iter()
                .all(|&h| &state[at(h, part, i)..][..held] == first);
            by_channel.extend_from_slice(first);
        }
        (by_channel, agree)
    }

    /// The recurrence's shape in a plan of runs of `tokens`, for its tuned form.
    pub fn recurrence(&self, tokens: u32) -> RecurrenceShape {
        RecurrenceShape {
            heads: self.n_v_heads,
            dim: self.dim,
            tokens,
        }
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
    dim: u32,
    n_k_heads: u32,
    n_v_heads: u32,
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
    conv_kernel: u32,
}

/// The buffers one layer's recurrence works on.
pub struct Buffers<'a> {
    /// (batch, row_len) the input projection's rows: convolved in place, then read.
    pub rows: &'a wgpu::Buffer,
    /// (channels, conv_kernel) ssm_conv1d, oldest tap first.
    pub conv: &'a wgpu::Buffer,
    /// (n_v_heads, 3, dim, conv_kernel - 1) the last inputs of each value head's q, k and v channels
    /// (`Shape::conv_state_len`).
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

/// Adds the convolution and the recurrence for each token of the run, in order. A run at position 0
/// starts from empty states; any other continues from the states the previous run left.
/// The recurrence takes the form the plan gives it (`Plan::recurrence`); a step's few tokens, one
/// dispatch for both.
pub fn push(plan: &mut Plan, s: Shape, b: &Buffers, eps: f32) {
    let form = plan.recurrence(&s.recurrence(plan.batch));
    push_with(plan, s, b, eps, form);
}

/// `push` with the recurrence's form chosen by the caller.
pub fn push_with(plan: &mut Plan, s: Shape, b: &Buffers, eps: f32, form: Recurrence) {
    assert!(s.dim.is_power_of_two() && s.dim <= MAX_DIM && s.dim >= 4);
    assert!((1..=MAX_CONV_KERNEL).contains(&s.conv_kernel));
    assert!(s.n_v_heads.is_multiple_of(s.n_k_heads));
    let step = plan.step.clone();
    let net = NetParams {
        n_k_heads: s.n_k_heads,
        n_v_heads: s.n_v_heads,
        dim: s.dim,
        row_len: s.row_len(),
        z_at: s.conv_channels(),
        beta_at: s.conv_channels() + s.value_dim(),
        alpha_at: s.conv_channels() + s.value_dim() + s.n_v_heads,
        eps,
        conv_kernel: s.conv_kernel,
    };
    let recurrence_buffers = [b.rows, b.state, b.gates, b.norm, b.out, &step];
    // A step's few tokens: the token form convolves them on the way in. (A prompt's token form,
    // which tuning weighs against the chunks on the same buffers, keeps the convolution apart.)
    if form == Recurrence::Tokens && plan.few_tokens() {
        let key = PipelineKey {
            workgroup: s.dim,
            ..PipelineKey::new(Kernel::DeltaNetConv, None)
        };
        let buffers = [&recurrence_buffers[..], &[b.conv, b.conv_state]].concat();
        plan.push(key, &buffers, super::params(&net), [s.n_v_heads, 1, 1]);
        return;
    }
    let conv = ConvParams {
        channels: s.conv_channels(),
        row_len: s.row_len(),
        kernel: s.conv_kernel,
        dim: s.dim,
        n_k_heads: s.n_k_heads,
        n_v_heads: s.n_v_heads,
    };
    plan.push(
        PipelineKey::new(Kernel::DeltaConv, None),
        &[b.rows, b.conv, b.conv_state, &step],
        super::params(&conv),
        [s.conv_channels().div_ceil(64), 1, 1],
    );
    plan.push_recurrence(
        s.recurrence(plan.batch),
        form,
        &recurrence_buffers,
        super::params(&net),
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
            conv: vec![0.0; (shape.conv_channels() * (shape.conv_kernel - 1)) as usize],
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

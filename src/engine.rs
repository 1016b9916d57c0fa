//! A loaded model on the GPU: load, one decode step at a time (one pass, one submit), and the counters
//! that say what a step costs.

use crate::gguf::{read_header, ByteSource, Header};
use crate::gpu::{map_and_copy, Gpu, GpuError};
use crate::models::{self, Forward, Loader};
use crate::Error;
use std::sync::Arc;
use web_time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Context length (positions in the KV cache); capped at the model's training context.
    pub n_ctx: u32,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { n_ctx: 2048 }
    }
}

/// What the engine has done, and what one step costs.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub dispatches_per_token: u32,
    /// Dispatches in each transformer layer.
    pub dispatches_per_layer: Vec<u32>,
    pub submits_per_token: u32,
    pub weight_bytes_per_token: u64,
    /// Steps run and the wall time they took, submit to result.
    pub steps: u64,
    pub step_time: Duration,
}

pub struct Engine {
    pub gpu: Arc<Gpu>,
    pub header: Header,
    forward: Forward,
    /// (n_vocab) f32, mapped to read the logits.
    staging: wgpu::Buffer,
    n_ctx: u32,
    pos: u32,
    pub stats: Stats,
}

impl Engine {
    /// Reads the header, checks the architecture and streams the weights into the GPU.
    /// `progress` receives (bytes loaded, bytes in all).
    pub async fn load(
        gpu: Arc<Gpu>,
        source: &dyn ByteSource,
        options: &LoadOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Engine, Error> {
        let header = read_header(source).await?;
        Engine::load_with_header(gpu, header, source, options, progress).await
    }

    pub async fn load_with_header(
        gpu: Arc<Gpu>,
        header: Header,
        source: &dyn ByteSource,
        options: &LoadOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Engine, Error> {
        if options.n_ctx == 0 {
            return Err(Error::Model("the context length must be at least 1".into()));
        }
        gpu.alive()?;
        let mut loader = Loader::new(gpu.clone(), &header, source, progress)?;
        let n_ctx_train = models::n_ctx_train(&loader);
        let n_ctx = options.n_ctx.min(n_ctx_train.max(1));
        let forward = models::load(&mut loader, n_ctx).await.map_err(|e| {
            // The tensors loaded so far are dropped with the error, but the queue still holds the
            // writes that filled them (and so the buffers) until its next submit: flush it now.
            gpu.queue.submit([]);
            #[cfg(not(target_arch = "wasm32"))]
            let _ = gpu.device.poll(wgpu::PollType::wait_indefinitely());
            match e {
                Error::Gpu(e @ (GpuError::TooLarge { .. } | GpuError::OutOfMemory { .. })) => {
                    Error::DoesNotFit {
                        adapter: gpu.describe(),
                        weight_bytes: header.tensors.iter().map(|t| t.bytes()).sum(),
                        source: e,
                    }
                }
                e => e,
            }
        })?;
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("logits staging"),
            size: forward.n_vocab as u64 * 4,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let stats = Stats {
            dispatches_per_token: forward.plan.dispatches.len() as u32,
            dispatches_per_layer: forward.plan.dispatches_per_layer(),
            submits_per_token: 1,
            weight_bytes_per_token: forward.plan.weight_bytes,
            ..Default::default()
        };
        Ok(Engine {
            gpu,
            header,
            forward,
            staging,
            n_ctx,
            pos: 0,
            stats,
        })
    }

    pub fn n_vocab(&self) -> u32 {
        self.forward.n_vocab
    }

    pub fn n_ctx(&self) -> u32 {
        self.n_ctx
    }

    /// Positions filled in the KV cache.
    pub fn pos(&self) -> u32 {
        self.pos
    }

    /// Forgets every position from `pos` on; what comes before stays cached.
    pub fn rewind(&mut self, pos: u32) {
        self.pos = self.pos.min(pos);
    }

    /// Runs one token at the next position. Returns its logits when `want_logits` (a prompt's tokens but
    /// the last need none, and then nothing waits for the GPU).
    pub async fn step(&mut self, token: u32, want_logits: bool) -> Result<Option<Vec<f32>>, Error> {
        self.gpu.alive()?;
        if self.pos >= self.n_ctx {
            return Err(Error::ContextFull(self.n_ctx));
        }
        if token >= self.forward.n_vocab {
            return Err(Error::BadToken {
                token,
                n_vocab: self.forward.n_vocab,
            });
        }
        let start = Instant::now();
        let gpu = &self.gpu;
        gpu.queue.write_buffer(
            &self.forward.step,
            0,
            bytemuck::cast_slice(&[token, self.pos]),
        );
        let mut enc = gpu.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            self.forward.plan.record(&mut pass);
        }
        let bytes = self.forward.n_vocab as u64 * 4;
        if want_logits {
            enc.copy_buffer_to_buffer(&self.forward.logits, 0, &self.staging, 0, bytes);
        }
        gpu.queue.submit([enc.finish()]);
        self.pos += 1;
        let logits = if want_logits {
            let raw = map_and_copy(gpu, &self.staging, bytes).await?;
            Some(bytemuck::pod_collect_to_vec(&raw))
        } else {
            let _ = gpu.device.poll(wgpu::PollType::Poll);
            None
        };
        self.stats.steps += 1;
        self.stats.step_time += start.elapsed();
        Ok(logits)
    }

    /// Times each dispatch of the plan on its own, `reps` times in one pass, at the current position
    /// (nothing is cached: the KV cache row written is the next one). Returns each pipeline's name and
    /// the summed time per token of its dispatches, slowest first. A profile, not a decode: the times
    /// include one submit per dispatch.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn profile(&mut self, reps: u32) -> Result<Vec<(String, Duration)>, Error> {
        let gpu = &self.gpu;
        gpu.queue.write_buffer(
            &self.forward.step,
            0,
            bytemuck::cast_slice(&[0u32, self.pos]),
        );
        let mut totals: Vec<(String, Duration)> = Vec::new();
        for d in &self.forward.plan.dispatches {
            let mut enc = gpu.device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(&d.pipeline);
                pass.set_bind_group(0, &d.bind_group, &[]);
                for _ in 0..reps {
                    let [x, y, z] = d.workgroups;
                    pass.dispatch_workgroups(x, y, z);
                }
            }
            let start = Instant::now();
            gpu.queue.submit([enc.finish()]);
            gpu.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| Error::Gpu(crate::gpu::GpuError::Readback(e.to_string())))?;
            let per_token = start.elapsed() / reps.max(1);
            let name = d.key.name();
            match totals.iter_mut().find(|(n, _)| *n == name) {
                Some((_, t)) => *t += per_token,
                None => totals.push((name, per_token)),
            }
        }
        totals.sort_by(|a, b| b.1.cmp(&a.1));
        Ok(totals)
    }

    /// Runs `tokens` and returns the logits after the last one.
    pub async fn prefill(&mut self, tokens: &[u32]) -> Result<Vec<f32>, Error> {
        let (last, rest) = tokens
            .split_last()
            .ok_or_else(|| Error::Model("an empty prompt".into()))?;
        for &t in rest {
            self.step(t, false).await?;
        }
        Ok(self
            .step(*last, true)
            .await?
            .expect("logits were asked for"))
    }
}

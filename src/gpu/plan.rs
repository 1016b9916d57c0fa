//! The per-token plan: every dispatch of one decode step, with its pipeline and bind group made once.
//!
//! A plan is described first (`Plan::push`), then `finish` writes every dispatch's parameters into one
//! uniform arena and makes the bind groups. Recording it is then a loop of set/dispatch calls into a
//! single compute pass.

use super::{Gpu, GpuError, PipelineKey};
use std::sync::Arc;

/// Parameters of one dispatch, written once into the arena.
pub struct UniformArena {
    bytes: Vec<u8>,
    align: usize,
}

impl UniformArena {
    fn new(align: u32) -> UniformArena {
        UniformArena {
            bytes: Vec::new(),
            align: align.max(16) as usize,
        }
    }

    /// Appends `params` and returns its offset.
    fn push(&mut self, params: &[u8]) -> u64 {
        let offset = self.bytes.len().next_multiple_of(self.align);
        self.bytes.resize(offset, 0);
        self.bytes.extend_from_slice(params);
        // A uniform binding is at least 16 bytes and a multiple of 16.
        self.bytes
            .resize(offset + params.len().next_multiple_of(16).max(16), 0);
        offset as u64
    }
}

/// One dispatch of the plan.
pub struct Dispatch {
    pub key: PipelineKey,
    pub pipeline: Arc<wgpu::ComputePipeline>,
    pub bind_group: wgpu::BindGroup,
    pub workgroups: [u32; 3],
}

struct Pending {
    key: PipelineKey,
    buffers: Vec<wgpu::Buffer>,
    params_offset: u64,
    params_len: u64,
    workgroups: [u32; 3],
}

/// The dispatches of one decode step, in order.
pub struct Plan {
    pending: Vec<Pending>,
    arena: UniformArena,
    pub dispatches: Vec<Dispatch>,
    /// Bytes of weights the plan reads once per run.
    pub weight_bytes: u64,
    /// Where each layer's dispatches begin, and where the last one ends.
    layer_bounds: Vec<usize>,
    _arena_buffer: Option<wgpu::Buffer>,
}

impl Plan {
    pub fn new(gpu: &Gpu) -> Plan {
        Plan {
            pending: Vec::new(),
            arena: UniformArena::new(gpu.limits.min_uniform_buffer_offset_alignment),
            dispatches: Vec::new(),
            weight_bytes: 0,
            layer_bounds: Vec::new(),
            _arena_buffer: None,
        }
    }

    /// Adds a dispatch. `buffers` bind to 0..n in order and `params` (a uniform) binds to n.
    pub fn push(
        &mut self,
        key: PipelineKey,
        buffers: &[&wgpu::Buffer],
        params: &[u8],
        workgroups: [u32; 3],
    ) {
        let params_offset = self.arena.push(params);
        self.pending.push(Pending {
            key,
            buffers: buffers.iter().map(|&b| b.clone()).collect(),
            params_offset,
            params_len: params.len().next_multiple_of(16).max(16) as u64,
            workgroups,
        });
    }

    /// Marks where a layer's dispatches begin; after the last layer, where it ends.
    pub fn layer_boundary(&mut self) {
        self.layer_bounds
            .push(self.pending.len() + self.dispatches.len());
    }

    /// Dispatches in each layer, as marked.
    pub fn dispatches_per_layer(&self) -> Vec<u32> {
        self.layer_bounds
            .windows(2)
            .map(|w| (w[1] - w[0]) as u32)
            .collect()
    }

    /// Makes the arena, the pipelines and the bind groups.
    pub async fn finish(&mut self, gpu: &Gpu) -> Result<(), GpuError> {
        let arena = super::buffers::uniform_buffer(gpu, "params", &self.arena.bytes);
        let pending = std::mem::take(&mut self.pending);
        let dispatches = gpu
            .checked("building the plan", || {
                pending
                    .into_iter()
                    .map(|p| {
                        let pipeline = gpu.pipelines.get(&gpu.device, p.key);
                        let mut entries: Vec<wgpu::BindGroupEntry> = p
                            .buffers
                            .iter()
                            .enumerate()
                            .map(|(i, b)| wgpu::BindGroupEntry {
                                binding: i as u32,
                                resource: b.as_entire_binding(),
                            })
                            .collect();
                        entries.push(wgpu::BindGroupEntry {
                            binding: p.buffers.len() as u32,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: &arena,
                                offset: p.params_offset,
                                size: wgpu::BufferSize::new(p.params_len),
                            }),
                        });
                        let bind_group = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: None,
                            layout: &pipeline.get_bind_group_layout(0),
                            entries: &entries,
                        });
                        Dispatch {
                            key: p.key,
                            pipeline,
                            bind_group,
                            workgroups: p.workgroups,
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .await?;
        self.dispatches.extend(dispatches);
        self._arena_buffer = Some(arena);
        Ok(())
    }

    /// Records every dispatch into `pass`.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        for d in &self.dispatches {
            pass.set_pipeline(&d.pipeline);
            pass.set_bind_group(0, &d.bind_group, &[]);
            let [x, y, z] = d.workgroups;
            pass.dispatch_workgroups(x, y, z);
        }
    }
}

/// Workgroup counts for `n` workgroups, folded into a second dimension past the 65535 limit.
pub fn grid(n: u32) -> [u32; 3] {
    const MAX: u32 = 65535;
    if n <= MAX {
        [n, 1, 1]
    } else {
        [MAX, n.div_ceil(MAX), 1]
    }
}

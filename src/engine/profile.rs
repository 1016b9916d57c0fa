//! Timing a plan on the GPU (`Engine::profile`, `wick bench --profile`): each dispatch alone, then
//! the whole plan; and the single-dispatch timing kernel tuning uses too.

use super::{copy_buffers, Engine};
use crate::gpu::scratch_buffer;
use crate::gpu::{map_and_copy, Gpu, Plan};
use crate::Error;
use std::sync::Arc;
use web_time::{Duration, Instant};

/// What `Engine::profile` found.
#[derive(Clone, Debug)]
pub struct Profile {
    /// Each pipeline's name and the summed time of its dispatches per run, slowest first; each
    /// dispatch timed alone, less a submit's own cost (`time_dispatch`).
    pub kernels: Vec<(String, Duration)>,
    /// The same per kernel, each dispatch timed where it runs in the plan (timestamps between the
    /// dispatches of one run), slowest first; where the adapter writes timestamps inside a pass.
    /// A dispatch alone runs on what the one before it left in the caches (its own weights, on a
    /// CPU), so the two can differ by tens of percent.
    pub in_plan: Option<Vec<(String, Duration)>>,
    /// The whole plan per run, its runs recorded back to back in one pass and one submit.
    pub whole: Duration,
    /// Where the model names its layers' kinds (attention, linear attention): each kind's layers, how
    /// many, and their dispatches' summed time per run, as `kernels` times them.
    pub layer_kinds: Vec<(String, u32, Duration)>,
}

/// Runs of a whole plan `Engine::profile` submits together.
const PLAN_RUNS: u32 = 4;
/// How long the dispatches of one profiled kernel's submit run together, at least: a submit costs
/// 2-3 ms in a browser (through its GPU process), which this spreads over as many dispatches.
const PROFILE_BATCH: Duration = Duration::from_millis(20);

/// The plan `Engine::profile` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profiled {
    /// One token's decode step.
    Decode,
    /// One full chunk of a prompt.
    Prefill,
    /// The plan of a decode step of this many sequences (at most as many as the engine was loaded
    /// for), which a speculative check of as many tokens runs too, over all its rows: run on
    /// consecutive tokens of one sequence, as a check's (where a step's attention takes them
    /// together; separate sequences' tokens take a workgroup each).
    Parallel(u32),
}

impl Engine {
    /// Times a plan on the GPU: the decode plan for one token (the one a step at this position runs:
    /// attention split over the keys deep into a context), the prefill plan for a whole chunk, or
    /// the parallel plan for all its sequences (split alike), at the current position (nothing is
    /// cached: the KV cache rows written are the next ones); `None` where the model has no such
    /// plan. A profile, not a run.
    pub async fn profile(&mut self, plan: Profiled) -> Result<Option<Profile>, Error> {
        let gpu = &self.gpu;
        let plan = match plan {
            Profiled::Decode => self.forward.decode_at(self.pos),
            Profiled::Prefill => match &self.forward.prefill {
                Some(prefill) => prefill,
                None => return Ok(None),
            },
            Profiled::Parallel(tokens) => match &self.forward.parallel {
                Some(parallel) if tokens <= parallel.rows() => {
                    parallel.plan_for(tokens, self.pos + tokens.max(1) - 1)
                }
                _ => return Ok(None),
            },
        };
        // The plan's runs change a recurrent model's states: they are put back after.
        let held = self.hold_states().await?;
        self.write_scratch_step(plan.batch);
        let mut alone = Vec::with_capacity(plan.dispatches.len());
        let mut layer_kinds: Vec<(String, u32, Duration)> = Vec::new();
        for (i, d) in plan.dispatches.iter().enumerate() {
            let time = time_dispatch(
                gpu,
                &d.pipeline,
                &d.bind_group,
                d.workgroups.counts(plan.batch),
                (PROFILE_BATCH, Duration::MAX),
            )
            .await?;
            if let Some(kind) = plan.layer_kind_of(i) {
                let first_of_layer = plan.layer_starts(i);
                match layer_kinds.iter_mut().find(|(k, _, _)| k == kind) {
                    Some((_, n, t)) => {
                        *n += first_of_layer as u32;
                        *t += time;
                    }
                    None => layer_kinds.push((kind.to_string(), 1, time)),
                }
            }
            alone.push(time);
        }
        let kernels = by_kernel(plan, &alone);
        let in_plan = (dispatch_times(gpu, plan, &[]).await?).map(|times| by_kernel(plan, &times));
        // The whole plan, PLAN_RUNS times in one submit and one wait: what a step costs the GPU
        // without its readback and the CPU's work between steps.
        let mut enc = gpu.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            for _ in 0..PLAN_RUNS {
                plan.record(&mut pass, plan.batch);
            }
        }
        let start = Instant::now();
        gpu.queue.submit([enc.finish()]);
        gpu.finished().await?;
        let whole = start.elapsed() / PLAN_RUNS;
        self.restore_states(&held);
        Ok(Some(Profile {
            kernels,
            in_plan,
            whole,
            layer_kinds,
        }))
    }

    /// A copy of a recurrent model's states (none for others), for runs that are not steps.
    pub(super) async fn hold_states(&self) -> Result<Vec<wgpu::Buffer>, Error> {
        let mut held = Vec::new();
        for b in &self.forward.recurrent {
            held.push(scratch_buffer(&self.gpu, "states held", b.size()).await?);
        }
        copy_buffers(&self.gpu, &self.forward.recurrent, &held);
        Ok(held)
    }

    /// Puts back the states `hold_states` copied.
    pub(super) fn restore_states(&self, held: &[wgpu::Buffer]) {
        copy_buffers(&self.gpu, held, &self.forward.recurrent);
    }

    /// Points the step input at the next position with `n` tokens, for runs of single dispatches (a
    /// profile, tuning): the cache rows they write are ones later steps write again. Near a full cache
    /// its last rows are taken instead, which no later step reads without writing them first. The
    /// tokens are spread over the vocabulary, so that a mixture-of-experts router sends them to
    /// experts as a text's would be sent, not all to the same few.
    pub(super) fn write_scratch_step(&self, n: u32) {
        self.write_scratch_step_at(n, self.pos);
    }

    /// As `write_scratch_step`, at position `pos` (or as far as the context goes).
    pub(super) fn write_scratch_step_at(&self, n: u32, pos: u32) {
        // A projector's plans have steps of their own, and more tokens than the model's runs.
        let n = n.min(self.n_ctx).min(self.forward.step.batch);
        let pos = pos.min(self.n_ctx - n);
        let n_vocab = self.forward.n_vocab.max(1) as u64;
        let tokens: Vec<u32> = (0..n as u64).map(|i| (i * 7919 % n_vocab) as u32).collect();
        self.forward.step.write(&self.gpu, pos, &tokens);
    }
}

/// A dispatch of a plan run another way (a matvec with another kernel shape, `Plan::reshaped`).
pub(super) type Swap = (Arc<wgpu::ComputePipeline>, wgpu::BindGroup, [u32; 3]);

/// The times of a plan's dispatches summed per kernel (`PipelineKey::name`), slowest first.
fn by_kernel(plan: &Plan, times: &[Duration]) -> Vec<(String, Duration)> {
    let mut kernels: Vec<(String, Duration)> = Vec::new();
    for (d, &time) in plan.dispatches.iter().zip(times) {
        let name = d.key.name();
        match kernels.iter_mut().find(|(n, _)| *n == name) {
            Some((_, sum)) => *sum += time,
            None => kernels.push((name, time)),
        }
    }
    kernels.sort_by_key(|k| std::cmp::Reverse(k.1));
    kernels
}

/// Runs of a plan `dispatch_times` times in one submit; each dispatch's time is its best. The first
/// runs on caches as the step before it would leave them, as each later one does.
const TIMED_RUNS: u32 = 2;

/// The time of each dispatch of `plan` where it runs among the others, from timestamps written
/// between them (the best of `TIMED_RUNS` runs): dispatch i as `swaps[i]` says where that is
/// `Some`. `None` where the adapter writes no timestamps inside a pass, or the runs have more
/// dispatches than a query set holds.
pub(super) async fn dispatch_times(
    gpu: &Gpu,
    plan: &Plan,
    swaps: &[Option<Swap>],
) -> Result<Option<Vec<Duration>>, Error> {
    let per_run = plan.dispatches.len() as u32 + 1;
    let n = per_run * TIMED_RUNS;
    if !gpu.times_dispatches() || n > wgpu::QUERY_SET_MAX_QUERIES {
        return Ok(None);
    }
    let queries = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
        label: Some("dispatch times"),
        ty: wgpu::QueryType::Timestamp,
        count: n,
    });
    let bytes = n as u64 * 8;
    let buffer = |usage| {
        gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("dispatch times"),
            size: bytes,
            usage,
            mapped_at_creation: false,
        })
    };
    let resolved = buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC);
    let staging = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
    let mut enc = gpu.device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        for run in 0..TIMED_RUNS {
            let first = run * per_run;
            pass.write_timestamp(&queries, first);
            for (i, d) in plan.dispatches.iter().enumerate() {
                match swaps.get(i).and_then(Option::as_ref) {
                    Some((pipeline, bind_group, [x, y, z])) => {
                        pass.set_pipeline(pipeline);
                        pass.set_bind_group(0, bind_group, &[]);
                        pass.dispatch_workgroups(*x, *y, *z);
                    }
                    None => {
                        pass.set_pipeline(&d.pipeline);
                        pass.set_bind_group(0, &d.bind_group, &[]);
                        let [x, y, z] = d.workgroups.counts(plan.batch);
                        pass.dispatch_workgroups(x, y, z);
                    }
                }
                pass.write_timestamp(&queries, first + i as u32 + 1);
            }
        }
    }
    enc.resolve_query_set(&queries, 0..n, &resolved, 0);
    enc.copy_buffer_to_buffer(&resolved, 0, &staging, 0, bytes);
    gpu.queue.submit([enc.finish()]);
    let ticks: Vec<u64> = map_and_copy(gpu, &staging, bytes, None).await?;
    let period = gpu.queue.get_timestamp_period() as f64;
    let runs: Vec<&[u64]> = ticks.chunks(per_run as usize).collect();
    let times = (0..plan.dispatches.len()).map(|i| {
        let ticks = (runs.iter()).map(|r| r[i + 1].saturating_sub(r[i])).min();
        Duration::from_nanos((ticks.unwrap_or(0) as f64 * period) as u64)
    });
    Ok(Some(times.collect()))
}

/// The time of one dispatch. A one-workgroup dispatch first pays what a first use costs (compiling
/// the pipeline, where the driver waits for its first use); a dispatch of no workgroups says what a
/// submit costs (under 0.1 ms natively, 2-3 ms in a browser, through its GPU process). Not one
/// workgroup: where a dispatch has no more workgroups than the device runs at once (a small matrix in
/// large tiles), one takes as long as all, and the dispatch would seem to cost nothing. One full dispatch
/// then says about how long it takes. From 100 ms up (a CPU emulating a GPU), or past `enough` (a
/// time that has lost already), that is the answer: a second run would cost as much and change little.
/// Below, the best of 2 submits of as many dispatches as make about `batch` (at most 50), back to back,
/// less the cost of a submit.
pub(super) async fn time_dispatch(
    gpu: &Gpu,
    pipeline: &wgpu::ComputePipeline,
    bind_group: &wgpu::BindGroup,
    workgroups: [u32; 3],
    (batch, enough): (Duration, Duration),
) -> Result<Duration, Error> {
    let submit = |workgroups, reps| time_submit(gpu, pipeline, bind_group, workgroups, reps);
    submit([1, 1, 1], 1).await?;
    let empty = submit([0, 0, 0], 1).await?;
    let one = submit(workgroups, 1).await?;
    if one >= Duration::from_millis(100) || one.saturating_sub(empty) > enough {
        return Ok(one);
    }
    let reps = (batch.as_nanos() / one.as_nanos().max(1)).clamp(1, 50) as u32;
    let many = submit(workgroups, reps)
        .await?
        .min(submit(workgroups, reps).await?);
    // A dispatch as long as the batch (a CPU adapter's, milliseconds) was timed alone three times:
    // the best of them, where a couple of cores' scheduling makes any one of them noisy.
    let many = match reps {
        1 => many.min(one),
        _ => many,
    };
    // Noise can take the submit's cost past a dispatch that costs next to nothing.
    Ok(many.saturating_sub(empty).max(many / 100) / reps)
}

/// The time of one submit of `reps` dispatches back to back, to their end.
async fn time_submit(
    gpu: &Gpu,
    pipeline: &wgpu::ComputePipeline,
    bind_group: &wgpu::BindGroup,
    [x, y, z]: [u32; 3],
    reps: u32,
) -> Result<Duration, Error> {
    let mut enc = gpu.device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, bind_group, &[]);
        for _ in 0..reps {
            pass.dispatch_workgroups(x, y, z);
        }
    }
    let start = Instant::now();
    gpu.queue.submit([enc.finish()]);
    gpu.finished().await?;
    Ok(start.elapsed())
}

//! The GPU: device and limits, buffers, the pipeline cache, the plans of runs and their kernel shapes.

mod attention_form;
mod buffers;
mod kernels;
mod matvec_kernel;
mod matvec_shape;
mod oneshot;
mod pipelines;
mod plan;
mod recurrence;
mod regroup;
mod rounding;
mod tiles;
mod tuning;

pub use attention_form::{
    attention_workgroup, chunk_timed_at, head_groups, largest_query_tile, SPLIT_TIMED_AT,
};
pub use attention_form::{latent_matrix_bytes, MAX_LATENT};
pub use attention_form::{AttentionForm, AttentionShape};
pub use buffers::{
    read_f32, read_failed, scratch_buffer, storage_buffer, uniform_buffer, Fill, GpuTensor, Shape,
    Stacked, TensorPart,
};
pub use kernels::{has_int8_form, Activation, Kernel, KvType, Store, XNorm, NORM_GAIN_BINDING};
pub use matvec_kernel::{default_threads_per_row, MatvecKernel, Offers, Split};
pub use matvec_shape::{Adapter, MatvecShape};
pub use pipelines::{PipelineKey, Pipelines};
pub use plan::{
    grid, Dispatch, Groups, Plan, Segment, StepInput, Turns, UniformArena, PAIR_TOKENS,
    STEP_TOKENS_MAX,
};
pub use recurrence::{Recurrence, RecurrenceShape};
pub use regroup::Regroup;
pub use rounding::Rounding;
pub use tiles::{attention_tile_bytes, matmul_tile, CoopTile, MatmulTile};
pub use tuning::{Choice, Tunable, Tuning, CANDIDATES};

use std::sync::Arc;

/// Why the GPU could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU adapter found ({0}); on Linux without a GPU, install Mesa's lavapipe (mesa-vulkan-drivers)")]
    NoAdapter(String),
    #[error("the GPU device could not be created: {0}")]
    NoDevice(String),
    #[error("this adapter allows {granted} storage buffers per shader stage; Wick's kernels bind up to {}", STORAGE_BUFFERS_PER_KERNEL)]
    TooFewStorageBuffers { granted: u32 },
    #[error(
        "this adapter runs {granted} threads a workgroup; Wick's kernels run up to {}",
        THREADS_PER_WORKGROUP
    )]
    TooFewThreads { granted: u32 },
    #[error("{what} needs {bytes} bytes of GPU memory in one buffer, more than this adapter's limit of {limit} bytes")]
    TooLarge {
        what: String,
        bytes: u64,
        limit: u64,
    },
    #[error("the GPU ran out of memory {what} ({detail})")]
    OutOfMemory { what: String, detail: String },
    #[error("GPU validation failed: {0}")]
    Validation(String),
    #[error("reading results back from the GPU failed: {0}")]
    Readback(String),
    #[error("the GPU device was lost ({0}); load the model again")]
    Lost(String),
}

/// The most storage buffers one of Wick's kernels binds: the fused q/k/v projection (weights, x, the
/// step input, q, both caches, RoPE's factors, the bias; its form that norms x binds the norm's gain
/// too, where the adapter allows: `Gpu::fuses_norms`). Core WebGPU guarantees 8; compatibility mode
/// only 4, though adapters grant more (lavapipe through OpenGL ES: 16).
pub const STORAGE_BUFFERS_PER_KERNEL: u32 = 8;

/// The most threads one of Wick's workgroups runs, in one dimension (the norms, the greedy choice,
/// the largest candidates the tuner offers). Core WebGPU guarantees 256; compatibility mode and
/// Vulkan only 128, though adapters grant more.
pub const THREADS_PER_WORKGROUP: u32 = 256;

/// What the kernel on matrix cores needs besides an adapter's cooperative matrices: f16 in its
/// tiles, and subgroups (each multiplies a block of its own, by its subgroup id).
const MATRIX_CORE_FEATURES: wgpu::Features = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
    .union(wgpu::Features::SHADER_F16)
    .union(wgpu::Features::SUBGROUP);

/// An adapter's matrix cores as shaders/matmul_coop.wgsl uses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixCores {
    /// The lanes of the adapter's widest subgroup.
    pub lanes: u32,
    /// The side of the square f16 products into f32 sums it multiplies: 16, or 8 where it has
    /// only those (Apple's GPUs, lavapipe).
    pub size: u32,
}

impl MatrixCores {
    /// What the adapter has of them, where it has what the kernel needs: the features, square f16
    /// products into f32 sums of a size WGSL names, and room for the kernel's workgroup.
    fn of(
        adapter: &wgpu::Adapter,
        info: &wgpu::AdapterInfo,
        limits: &wgpu::Limits,
    ) -> Option<MatrixCores> {
        use wgpu::CooperativeScalarType::{F16, F32};
        if !adapter.features().contains(MATRIX_CORE_FEATURES) {
            return None;
        }
        let products = adapter.cooperative_matrix_properties();
        let has = |size| {
            products.iter().any(|p| {
                (p.m_size, p.n_size, p.k_size) == (size, size, size)
                    && p.ab_type == F16
                    && p.cr_type == F32
            })
        };
        let size = [16, 8].into_iter().find(|&size| has(size))?;
        let cores = MatrixCores {
            lanes: info.subgroup_max_size,
            size,
        };
        let square_workgroup = tiles::CoopTile::Square.workgroup(size, cores.lanes);
        let fits =
            cores.lanes > 0 && square_workgroup <= limits.max_compute_invocations_per_workgroup;
        fits.then_some(cores)
    }
}

/// Live GPU objects of a device: a leak shows as growth between two readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuMemory {
    pub buffers: u64,
    pub buffer_bytes: u64,
    pub bind_groups: u64,
    pub command_encoders: u64,
}

/// A device and what we know about it.
pub struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    /// The fewest lanes a subgroup has, where kernels may use subgroup operations: natively, on
    /// adapters with them; in a browser, where the page had the device granted WebGPU's
    /// (`Gpu::in_browser`).
    pub subgroup_size: Option<u32>,
    /// The adapter's matrix cores, where it multiplies f16 into f32 sums there (cooperative matrices,
    /// natively: Vulkan's VK_KHR_cooperative_matrix, Metal's simdgroup matrices).
    matrix_cores: Option<MatrixCores>,
    pub pipelines: Pipelines,
    /// Why the device was lost (a GPU reset, a driver crash, the browser reclaiming it), once it was.
    lost: Arc<std::sync::Mutex<Option<String>>>,
    /// Kernel shapes for this adapter; plans take a copy when they are made.
    tuning: std::sync::RwLock<Arc<Tuning>>,
    /// Whether plans made from now on norm a product's x in its own kernel (`fuses_norms`).
    fuse_norms: std::sync::atomic::AtomicBool,
    /// Whether models loaded from now on split a step's attention deep into a context where the
    /// step holds several tokens (`splits_steps`).
    split_steps: std::sync::atomic::AtomicBool,
    /// The position from which models loaded from now on split a step's attention
    /// (`split_attention_from`).
    split_from: std::sync::atomic::AtomicU32,
    /// The workgroups a step's split attention aims at in models loaded from now on
    /// (`set_split_workgroups`).
    split_workgroups: std::sync::atomic::AtomicU32,
    /// What plans may round, by `Rounding::index` (`set_rounds`).
    rounds: [std::sync::atomic::AtomicBool; 3],
    /// The matrix cores failed their check (`forget_matrix_cores`).
    matrix_cores_failed: std::sync::atomic::AtomicBool,
}

impl Gpu {
    /// Opens the best adapter with the largest limits it offers.
    pub async fn new() -> Result<Arc<Gpu>, GpuError> {
        Gpu::with_limits(|limits| limits).await
    }

    /// Opens the adapter the browser's WebGPU gives, whose device the page had granted WebGPU's
    /// subgroups where `subgroups` says so: wgpu's web backend neither asks for them nor reports
    /// them, so the page does both (js/worker.js).
    pub async fn in_browser(subgroups: bool) -> Result<Arc<Gpu>, GpuError> {
        Gpu::open(|limits| limits, subgroups, wgpu::Features::empty()).await
    }

    /// Opens the best adapter with the limits `choose` makes of the largest it offers (lower ones stand
    /// in for a smaller adapter, as tests do).
    pub async fn with_limits(
        choose: impl FnOnce(wgpu::Limits) -> wgpu::Limits,
    ) -> Result<Arc<Gpu>, GpuError> {
        Gpu::open(choose, false, wgpu::Features::empty()).await
    }

    /// Opens the best adapter with the largest limits it offers, its device without `features`
    /// where the adapter has them (a feature its driver gets wrong; tests of the paths without it).
    pub async fn without_features(features: wgpu::Features) -> Result<Arc<Gpu>, GpuError> {
        Gpu::open(|limits| limits, false, features).await
    }

    /// `with_limits`, in a browser whose page had the device granted subgroups where
    /// `browser_subgroups` says so, the device without `without` of the adapter's features.
    async fn open(
        choose: impl FnOnce(wgpu::Limits) -> wgpu::Limits,
        browser_subgroups: bool,
        without: wgpu::Features,
    ) -> Result<Arc<Gpu>, GpuError> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
        let info = adapter.get_info();
        let limits = choose(adapter.limits());
        let granted = limits.max_storage_buffers_per_shader_stage;
        if granted < STORAGE_BUFFERS_PER_KERNEL {
            return Err(GpuError::TooFewStorageBuffers { granted });
        }
        // Checked here by name: natively wgpu checks a workgroup's size before its override
        // constants set it, so a kernel too wide would reach the driver unchecked.
        let granted =
            (limits.max_compute_invocations_per_workgroup).min(limits.max_compute_workgroup_size_x);
        if granted < THREADS_PER_WORKGROUP {
            return Err(GpuError::TooFewThreads { granted });
        }
        // Timestamps between dispatches time kernels where they run in a plan (`Engine::profile`,
        // tuning); timestamps only around a pass (WebGPU's) would not.
        let timestamps =
            wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES;
        let offered = adapter.features() - without;
        let mut features = offered & wgpu::Features::SUBGROUP;
        if offered.contains(timestamps) {
            features |= timestamps;
        }
        let has_subgroups = features.contains(wgpu::Features::SUBGROUP) || browser_subgroups;
        let subgroup_size =
            Some(info.subgroup_min_size).filter(|&lanes| has_subgroups && lanes > 0);
        let matrix_cores = MatrixCores::of(&adapter, &info, &limits)
            .filter(|_| offered.contains(MATRIX_CORE_FEATURES));
        let experimental = match matrix_cores {
            Some(_) => {
                features |= MATRIX_CORE_FEATURES;
                // Cooperative matrices are wgpu's one experimental feature Wick asks for. The
                // kernel that uses them is checked on each device before the tuner offers it
                // (`ops::matvec::matrix_cores_work`), and against the CPU in tests/ops_matmul.rs.
                #[allow(unsafe_code)]
                unsafe {
                    wgpu::ExperimentalFeatures::enabled()
                }
            }
            None => wgpu::ExperimentalFeatures::disabled(),
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("wick"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features: experimental,
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| GpuError::NoDevice(e.to_string()))?;
        let lost = Arc::new(std::sync::Mutex::new(None));
        let on_lost = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            let why = format!("{reason:?}: {message}");
            *on_lost.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        });
        let pipelines = Pipelines::default();
        let gpu = Gpu {
            device,
            queue,
            info,
            limits,
            subgroup_size,
            matrix_cores,
            pipelines,
            lost,
            tuning: Default::default(),
            fuse_norms: Default::default(),
            split_steps: Default::default(),
            split_from: Default::default(),
            split_workgroups: std::sync::atomic::AtomicU32::new(attention_form::SPLIT_WORKGROUPS),
            rounds: Default::default(),
            matrix_cores_failed: Default::default(),
        };
        gpu.set_fuses_norms(!gpu.runs_on_cpu());
        gpu.set_splits_steps(!gpu.runs_on_cpu());
        gpu.set_split_attention_from(attention_form::split_attention_from(gpu.runs_on_cpu()));
        for rounding in Rounding::ALL {
            gpu.set_rounds(rounding, gpu.rounds_by_default(rounding));
        }
        // Natively the Gpu is shared between threads; in the browser, where wgpu's handles are
        // neither Send nor Sync, one thread holds every Arc of it.
        #[allow(clippy::arc_with_non_send_sync)]
        Ok(Arc::new(gpu))
    }

    /// The kernel shapes plans made from now on use (through `usable`).
    pub fn tuning(&self) -> Arc<Tuning> {
        self.tuning
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// `tuning` as plans may use it: without its winners on the matrix cores, on 8-bit x or in f16
    /// tiles while plans may not round so (`set_rounds`), those shapes then taking their default
    /// kernels. The winners stay in the GPU's tuning, and so in what is kept of it.
    pub fn usable(&self, tuning: Arc<Tuning>) -> Arc<Tuning> {
        let unusable = |r: Option<Rounding>| r.is_some_and(|r| !self.rounds(r));
        let matvec = |k: &MatvecKernel| unusable(k.rounding());
        let attention = |form: &AttentionForm| unusable(form.rounding());
        if !tuning.matvec.values().any(matvec) && !tuning.attention.values().any(attention) {
            return tuning;
        }
        let mut f32_only = (*tuning).clone();
        f32_only.matvec.retain(|_, k| !matvec(k));
        f32_only.attention.retain(|_, form| !attention(form));
        Arc::new(f32_only)
    }

    /// Sets the kernel shapes plans made from now on use; any that sum by subgroups are left out
    /// where this device has none, and all where they were timed among an older set of candidates
    /// (they are timed again).
    pub fn set_tuning(&self, mut tuning: Tuning) {
        if tuning.candidates != tuning::CANDIDATES {
            tuning = Tuning::default();
        }
        if self.subgroup_size.is_none() {
            tuning.matvec.retain(|_, k| !k.subgroup_sum);
        }
        let lanes = self.subgroup_size.unwrap_or(0);
        (tuning.attention).retain(|_, form| form.lanes().is_none_or(|l| l <= lanes));
        if !self.has_matrix_cores() {
            tuning.matvec.retain(|_, k| k.cooperative.is_none());
            (tuning.attention).retain(|_, form| form.rounding() != Some(Rounding::MatrixCores));
        }
        *self.tuning.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(tuning);
    }

    /// Whether the products that read a norm of x (the q/k/v projection, gate and up) norm x in
    /// their own kernels in plans of a few tokens (shaders/x_rms_norm.wgsl), saving the norm's own
    /// dispatch, for a multiply-add and a gain for each x read: on a GPU arithmetic that reading the
    /// weights hides, for two dispatches less a layer; where the adapter runs workgroups on the CPU
    /// (`runs_on_cpu`), slower (BENCHMARKS.md). The adapter's kind decides unless set.
    pub fn fuses_norms(&self) -> bool {
        self.fuse_norms.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets `fuses_norms` for plans made from now on; refused (false) where the adapter binds too few
    /// storage buffers for the fused projection (one more than `STORAGE_BUFFERS_PER_KERNEL`).
    pub fn set_fuses_norms(&self, on: bool) -> bool {
        let possible =
            self.limits.max_storage_buffers_per_shader_stage > STORAGE_BUFFERS_PER_KERNEL;
        self.fuse_norms
            .store(on && possible, std::sync::atomic::Ordering::Relaxed);
        possible || !on
    }

    /// Whether a step of several tokens (parallel requests' tokens, a speculative check's) splits
    /// each token's attention over its keys from `split_attention_from` on, as a step of one does,
    /// in models loaded from now on. On a GPU the whole-head form's workgroups, a group of
    /// heads and a token each, leave most of it idle there; where the adapter runs workgroups on the
    /// CPU (`runs_on_cpu`), a few tokens' groups fill its cores already, and the splits and their
    /// merge cost more (BENCHMARKS.md). The adapter's kind decides unless set.
    pub fn splits_steps(&self) -> bool {
        self.split_steps.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets `splits_steps` for models loaded from now on.
    pub fn set_splits_steps(&self, on: bool) {
        (self.split_steps).store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The position from which a step's attention splits over the keys in models loaded from now
    /// on: `attention_form::split_attention_from` for the adapter's kind unless set (where the split
    /// pays on an adapter is a measurement: `wick bench --split-from`).
    pub fn split_attention_from(&self) -> u32 {
        self.split_from.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets `split_attention_from` for models loaded from now on (at least 1).
    pub fn set_split_attention_from(&self, pos: u32) {
        (self.split_from).store(pos.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// Sets the workgroups a step's attention split over its keys aims at on a GPU, a layer, for
    /// models loaded from now on (`attention_form::SPLIT_WORKGROUPS` unless set; how many pay on an
    /// adapter is a measurement: `wick bench --split-workgroups`).
    pub fn set_split_workgroups(&self, workgroups: u32) {
        (self.split_workgroups).store(workgroups.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// The adapter's matrix cores, where it has them and plans may use them: the tuner then offers
    /// a prompt's products a tile on them (shaders/matmul_coop.wgsl), whose x and weights are rounded
    /// to f16 (sums stay f32).
    pub fn matrix_cores(&self) -> Option<MatrixCores> {
        self.matrix_cores
            .filter(|_| self.rounds(Rounding::MatrixCores))
    }

    /// Whether the adapter has matrix cores that Wick's kernels can use, used or not.
    pub fn has_matrix_cores(&self) -> bool {
        let failed = self
            .matrix_cores_failed
            .load(std::sync::atomic::Ordering::Relaxed);
        self.matrix_cores.is_some() && !failed
    }

    /// Leaves the matrix cores out from now on, winners on them included: the kernel on them failed
    /// to build or erred on this device (`ops::matvec::matrix_cores_work`).
    pub fn forget_matrix_cores(&self) {
        (self.matrix_cores_failed).store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Lets plans made from now on round as `rounding` says, or keeps them from it; tuned winners
    /// that round so are then passed over (`usable`), and the tuner does not offer it. Set it
    /// before the kept tuning is given (`set_tuning`): winners are kept by what plans may round
    /// (`tuning_key`).
    pub fn set_rounds(&self, rounding: Rounding, on: bool) {
        (self.rounds[rounding.index()]).store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether plans made from now on may round as `rounding` says (on the matrix cores: where the
    /// adapter has them, and their check passed).
    pub fn rounds(&self, rounding: Rounding) -> bool {
        let on = self.rounds[rounding.index()].load(std::sync::atomic::Ordering::Relaxed);
        on && (rounding != Rounding::MatrixCores || self.has_matrix_cores())
    }

    /// Whether plans may round as `rounding` says unless told: on the matrix cores where the adapter
    /// has them; on 8-bit x and in f16 tiles on GPUs, not where the adapter runs workgroups on the
    /// CPU.
    pub fn rounds_by_default(&self, rounding: Rounding) -> bool {
        match rounding {
            Rounding::MatrixCores => self.has_matrix_cores(),
            Rounding::Int8X | Rounding::F16Tiles => !self.runs_on_cpu(),
        }
    }

    /// What the tuner may offer this device's plans (`MatvecShape::candidates`).
    pub fn offers(&self) -> Offers {
        Offers {
            subgroup_size: self.subgroup_size,
            matrix_cores: self.matrix_cores(),
            int8_x: self.rounds(Rounding::Int8X),
            f16_tiles: self.rounds(Rounding::F16Tiles),
            cpu_forms: self.runs_on_cpu(),
        }
    }

    /// Whether the adapter runs workgroups on the CPU (lavapipe, SwiftShader), where kernels are
    /// bound by arithmetic rather than by memory and dispatches: natively its device type says so;
    /// the browser's WebGPU reports no device type (wgpu says CPU only of a fallback adapter), but a
    /// software adapter names its rasterizer in its description.
    pub fn runs_on_cpu(&self) -> bool {
        let name = self.info.name.to_lowercase();
        self.info.device_type == wgpu::DeviceType::Cpu
            || ["llvmpipe", "lavapipe", "swiftshader"]
                .iter()
                .any(|software| name.contains(software))
    }

    /// What the kernels chosen unless tuned depend on, of this adapter.
    pub fn adapter(&self) -> Adapter {
        Adapter {
            workgroup_bytes: self.limits.max_compute_workgroup_storage_size,
            runs_on_cpu: self.runs_on_cpu(),
            split_workgroups: self
                .split_workgroups
                .load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Whether a compute pass may write timestamps between its dispatches.
    pub fn times_dispatches(&self) -> bool {
        (self.device.features()).contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES)
    }

    /// Names this adapter and driver.
    pub fn adapter_key(&self) -> String {
        let i = &self.info;
        format!(
            "{} | {:?} | {} {}",
            i.name, i.backend, i.driver, i.driver_info
        )
    }

    /// Names this adapter and driver, and what plans may round where that differs from what they
    /// may unless told (" | rounding: -matrix cores +f16 tiles"), for keeping tuning results apart:
    /// winners timed with the matrix cores offered say nothing of the fastest f32 tile, so plans
    /// kept to f32 (perplexity, `wick bench --matrix-cores off`) have winners of their own, timed
    /// once as any others.
    pub fn tuning_key(&self) -> String {
        let changed: Vec<String> = (Rounding::ALL.into_iter())
            .map(|r| (r, self.rounds(r)))
            .filter(|&(r, now)| now != self.rounds_by_default(r))
            .map(|(r, now)| format!("{}{}", if now { '+' } else { '-' }, r.name()))
            .collect();
        match changed.is_empty() {
            true => self.adapter_key(),
            false => format!("{} | rounding: {}", self.adapter_key(), changed.join(" ")),
        }
    }

    /// The largest buffer one binding may see.
    pub fn max_binding(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
    }

    /// "name (backend)", for messages and benchmarks.
    pub fn describe(&self) -> String {
        format!("{} ({:?})", self.info.name, self.info.backend)
    }

    /// An error once the device is lost: nothing submitted to it would run.
    pub fn alive(&self) -> Result<(), GpuError> {
        match &*self.lost.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(why) => Err(GpuError::Lost(why.clone())),
            None => Ok(()),
        }
    }

    /// What this device holds now, as wgpu counts it (natively; the browser's WebGPU reports nothing).
    pub fn memory(&self) -> GpuMemory {
        let hal = self.device.get_internal_counters().hal;
        GpuMemory {
            buffers: hal.buffers.read() as u64,
            buffer_bytes: hal.buffer_memory.read() as u64,
            bind_groups: hal.bind_groups.read() as u64,
            command_encoders: hal.command_encoders.read() as u64,
        }
    }

    /// Runs `f` and turns any validation, internal (a driver that fails to compile a kernel) or
    /// out-of-memory error it raised into a `GpuError`.
    pub async fn checked<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T, GpuError> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        let validation = validation.pop();
        let internal = internal.pop();
        let oom = oom.pop();
        let refused = match validation.await {
            Some(e) => Some(e),
            None => internal.await,
        };
        if let Some(e) = refused {
            drop(oom.await);
            return Err(GpuError::Validation(format!("{what}: {e}")));
        }
        if let Some(e) = oom.await {
            return Err(GpuError::OutOfMemory {
                what: what.to_string(),
                detail: e.to_string(),
            });
        }
        Ok(value)
    }

    /// Waits until everything submitted so far has run. Natively it blocks on the device; in the
    /// browser the future resolves when the page's event loop has run the queue's callback.
    pub async fn finished(&self) -> Result<(), GpuError> {
        let (done, signal) = oneshot::channel();
        self.queue.on_submitted_work_done(move || done.send(()));
        #[cfg(not(target_arch = "wasm32"))]
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| {
                self.alive()
                    .err()
                    .unwrap_or(GpuError::Readback(e.to_string()))
            })?;
        signal.await;
        Ok(())
    }

    /// Runs the buffer writes queued so far, so that their staging copies are freed: natively once the
    /// device is polled (here, at once); in the browser as the page's event loop runs the queue.
    pub fn flush_writes(&self) {
        self.queue.submit([]);
        #[cfg(not(target_arch = "wasm32"))]
        let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
    }

    /// Copies `len` bytes of `src` into host memory: one submit and a wait.
    pub async fn read_back(&self, src: &wgpu::Buffer, len: u64) -> Result<Vec<u8>, GpuError> {
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read_back"),
            size: len,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(src, 0, &staging, 0, len);
        self.queue.submit([enc.finish()]);
        map_and_copy(self, &staging, len, None).await
    }
}

/// Reads the first `n` f32 values of a buffer.
pub async fn read_back_f32(gpu: &Gpu, src: &wgpu::Buffer, n: usize) -> Result<Vec<f32>, GpuError> {
    Ok(bytemuck::pod_collect_to_vec(
        &gpu.read_back(src, n as u64 * 4).await?,
    ))
}

/// Maps a MAP_READ buffer, waits for it, copies out its first `len` bytes as values of `T` (one
/// copy, into memory aligned for them) and unmaps it. Natively the wait blocks on the device, until
/// the submission `after` (where given: one before the latest) or else the latest has run; in the browser the future resolves when the page's event loop has run
/// the map callback, once the submissions that write the buffer have run.
pub async fn map_and_copy<T: bytemuck::Pod>(
    gpu: &Gpu,
    staging: &wgpu::Buffer,
    len: u64,
    after: Option<wgpu::SubmissionIndex>,
) -> Result<Vec<T>, GpuError> {
    let slice = staging.slice(..len);
    let (done, mapped) = oneshot::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| done.send(r));
    // A lost device fails the map; say that rather than how the map failed.
    let failed = |e: String| gpu.alive().err().unwrap_or(GpuError::Readback(e));
    #[cfg(target_arch = "wasm32")] // the map resolves once the submissions writing the buffer ran
    let _ = after;
    #[cfg(not(target_arch = "wasm32"))] // in the browser the page's event loop runs the callback
    gpu.device
        .poll(wgpu::PollType::Wait {
            submission_index: after,
            timeout: None,
        })
        .map_err(|e| failed(e.to_string()))?;
    mapped.await.map_err(|e| failed(e.to_string()))?;
    let mapped = (slice.get_mapped_range()).map_err(|e| GpuError::Readback(e.to_string()))?;
    let values = bytemuck::pod_collect_to_vec(&mapped);
    drop(mapped);
    staging.unmap();
    Ok(values)
}

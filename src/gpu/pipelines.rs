//! Compute pipelines: a kernel (`kernels.rs`) with its weight type and shape, as a typed key whose
//! source is the kernel's WGSL behind its constants, built once and cached.

use super::attention_form::{
    attention_workgroup, MATRIX_SUBGROUPS, QUERY_WORKGROUP, ROWS_WORKGROUP,
};
use super::kernels::{dequant_source, q8_source, wgsl, Kernel, XNorm};
use super::regroup::Regroup;
use super::tiles::{attention_tile, matmul_tile, MatmulTile};
use super::tiles::{ROWS_TILE_WORKGROUP, STEP_ROWS_TILE_TOKENS};
use super::{AttentionForm, AttentionShape, MatvecKernel, MatvecShape, Recurrence, Split};
use super::{Gpu, GpuError};
use crate::gguf::GgmlType;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Identifies one compiled pipeline: the kernel, the weight type it reads (if any) and its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PipelineKey {
    pub kernel: Kernel,
    pub ty: Option<GgmlType>,
    /// Threads per workgroup (the `WG` override constant).
    pub workgroup: u32,
    /// Threads that share one row, for kernels that take rows (the `TPR` override constant).
    pub threads_per_row: Option<u32>,
    /// Those threads sum by subgroup shuffles rather than through workgroup memory.
    pub subgroup_sum: bool,
    /// How those threads divide a row.
    pub split: Split,
    /// Tokens a layer of `Kernel::MatvecPairs` workgroups takes, where not one (the `TOKENS`
    /// override constant of shaders/matvec_pairs.wgsl); tokens an attention workgroup takes (the
    /// `TQ` constant of shaders/attend.wgsl); a matmul tile's tokens, where not its workgroup's
    /// (`matmul_tile`): the tile in registers taking a step's few (`STEP_ROWS_TILE_TOKENS`).
    pub tokens: Option<u32>,
    /// The row length of x and its rows a workgroup quantizes, in a split on 8-bit x
    /// (`Split::PartsQ8`), which size its x in workgroup memory (the `XQ_COLS` and `XQ_TOKENS`
    /// constants of shaders/row_dot_q8.wgsl).
    pub x_q8: Option<(u32, u32)>,
    /// A matmul's tile passes through workgroup memory as f16 (`MatmulTile::f16`).
    pub f16_tile: bool,
    /// What a slot of a row's threads takes, in rows of a `Kernel::Matvec` kernel (the `ROWS`
    /// override constant of shaders/matvec.wgsl) or pairs of a `Kernel::MatvecPairs` kernel's
    /// (`PAIRS` of matvec_pairs.wgsl in a one-token run; in a run of several, 4 pairs take
    /// shaders/slot_eight_rows.wgsl where 1 takes slot_pair.wgsl): `MatvecKernel::slot_size`.
    pub slot_size: u32,
    /// A block's parts are 8 threads' vec4s (`MatvecKernel::wide`): W bound as vec4s of words
    /// (shaders/dequant/words_vec4.wgsl) and the type's wide parts file.
    pub wide: bool,
}

impl PipelineKey {
    pub fn new(kernel: Kernel, ty: Option<GgmlType>) -> PipelineKey {
        PipelineKey {
            kernel,
            ty,
            workgroup: 64,
            threads_per_row: None,
            subgroup_sum: false,
            split: Split::Chunks,
            tokens: None,
            x_q8: None,
            f16_tile: false,
            slot_size: 1,
            wide: false,
        }
    }

    /// The kernel of a Gated DeltaNet recurrence in a form: a workgroup per value head, a thread per
    /// dimension of a head.
    pub fn recurrence(dim: u32, form: Recurrence) -> PipelineKey {
        match form {
            Recurrence::Tokens => PipelineKey {
                workgroup: dim,
                ..PipelineKey::new(Kernel::DeltaNet, None)
            },
            Recurrence::Chunks(chunk) => PipelineKey {
                workgroup: dim,
                tokens: Some(chunk),
                ..PipelineKey::new(Kernel::DeltaNetChunks, None)
            },
        }
    }

    /// The kernel of a plan's attention in a form: a prompt's, with the queries a workgroup takes as
    /// its tokens, or a decode step's split.
    pub fn attention(shape: &AttentionShape, form: AttentionForm) -> PipelineKey {
        let AttentionShape {
            head_dim, cache, ..
        } = *shape;
        match form {
            AttentionForm::Query => PipelineKey {
                workgroup: QUERY_WORKGROUP,
                tokens: Some(QUERY_WORKGROUP),
                ..PipelineKey::new(Kernel::AttentionTiled(head_dim, cache), None)
            },
            AttentionForm::Rows { queries, keys } => PipelineKey {
                workgroup: ROWS_WORKGROUP,
                tokens: Some(queries),
                ..PipelineKey::new(Kernel::AttentionRows(head_dim, cache, keys), None)
            },
            AttentionForm::SplitKeys => {
                let tokens = shape.split_keys_tokens();
                PipelineKey {
                    workgroup: attention_workgroup(head_dim),
                    tokens: (tokens > 1).then_some(tokens),
                    ..PipelineKey::new(Kernel::AttentionSplit(cache), None)
                }
            }
            AttentionForm::SplitLanes {
                lanes,
                columns,
                keys,
            } => {
                let (rows, tokens) = (shape.split_rows(), shape.split_lanes_tokens(lanes));
                PipelineKey {
                    workgroup: lanes * columns,
                    tokens: (tokens > 1).then_some(tokens),
                    ..PipelineKey::new(
                        Kernel::AttentionSplitLanes(head_dim, cache, lanes, rows, keys),
                        None,
                    )
                }
            }
            AttentionForm::Matrix { size, lanes, keys } => PipelineKey {
                workgroup: MATRIX_SUBGROUPS * lanes,
                tokens: Some(MATRIX_SUBGROUPS * size),
                ..PipelineKey::new(Kernel::AttentionCoop(head_dim, cache, size, keys), None)
            },
            // Its tokens are the workgroup's `tokens` (attend.wgsl's TQ).
            AttentionForm::Latent { tokens } => PipelineKey {
                workgroup: 128,
                tokens: (tokens > 1).then_some(tokens),
                ..PipelineKey::new(Kernel::MlaAttention(cache), None)
            },
            // Its tokens are rows of (token, head), `size` a workgroup.
            AttentionForm::LatentMatrix { size, lanes, keys } => {
                let latent = shape.latent.expect("a latent form of a latent shape");
                let rope = head_dim - latent;
                PipelineKey {
                    workgroup: MATRIX_SUBGROUPS * lanes,
                    tokens: Some(size),
                    ..PipelineKey::new(
                        Kernel::MlaAttentionCoop(latent, rope, cache, size, keys),
                        None,
                    )
                }
            }
        }
    }

    /// The kernel of a matvec shape (`Kernel::Matvec`, `MatvecPairs`, `MatvecId` or `Matmul`) in a
    /// kernel shape.
    pub fn matvec(shape: &MatvecShape, kernel: MatvecKernel) -> PipelineKey {
        let key = PipelineKey {
            workgroup: kernel.workgroup,
            ..PipelineKey::new(shape.kernel, Some(shape.ty))
        };
        match (shape.kernel, kernel.cooperative) {
            (Kernel::Matmul(store, XNorm::None), Some(size)) => PipelineKey {
                kernel: Kernel::MatmulCoop(store, size, kernel.coop_tile),
                ..key
            },
            (Kernel::MatmulId, Some(size)) => PipelineKey {
                kernel: Kernel::MatmulIdCoop(size, kernel.coop_tile),
                ..key
            },
            // A tile, named by its workgroup size and whether it is held in f16 (the grouped
            // product's has no form on the matrix cores).
            (Kernel::Matmul(..) | Kernel::MatmulId, None) | (Kernel::MatmulGrouped, _) => {
                PipelineKey {
                    f16_tile: kernel.f16_tile,
                    ..key
                }
            }
            // A step's pair product as the plain product's tile (`MatvecShape::takes_tiles`): the
            // same bindings, parameters, store and norm; in registers, a tile of a step's few tokens.
            (Kernel::MatvecPairs(store, x), None) if kernel.is_tile() => PipelineKey {
                kernel: Kernel::Matmul(store, x),
                tokens: (kernel.workgroup == ROWS_TILE_WORKGROUP).then_some(STEP_ROWS_TILE_TOKENS),
                ..key
            },
            _ => PipelineKey {
                threads_per_row: Some(kernel.threads_per_row),
                subgroup_sum: kernel.subgroup_sum,
                split: kernel.split,
                tokens: match kernel.eight_tokens {
                    true => Some(8),
                    false => (shape.tokens > 1).then_some(shape.tokens),
                },
                x_q8: (kernel.split == Split::PartsQ8).then_some((shape.cols, shape.x_rows())),
                slot_size: kernel.slot_size,
                wide: kernel.wide,
                ..key
            },
        }
    }

    /// The tile of the kernels that multiply tiles (shaders/matmul_tile.wgsl, matmul_rows_tile.wgsl,
    /// matmul_coop_tile.wgsl), by the workgroup size, with the key's tokens where it has them.
    pub fn tile(&self) -> Option<MatmulTile> {
        match self.kernel {
            Kernel::Matmul(..) | Kernel::MatmulId | Kernel::MatmulGrouped => {
                let tile = matmul_tile(self.workgroup).in_f16(self.f16_tile);
                Some(MatmulTile {
                    tokens: self.tokens.unwrap_or(tile.tokens),
                    ..tile
                })
            }
            Kernel::MatmulCoop(..) | Kernel::MatmulIdCoop(..) => {
                self.kernel.coop_tile().map(|tile| tile.tile())
            }
            _ => None,
        }
    }

    /// Rows one row slot (TPR threads) of a matvec kernel computes: its size (`slot_size`) in its
    /// kernel's unit, a pair kernel's pair or another's row.
    pub fn rows_per_slot(&self) -> u32 {
        match self.kernel {
            Kernel::MatvecPairs(..) => 2 * self.slot_size,
            _ => self.slot_size,
        }
    }

    /// A short name for profiles: kernel, weight type and shape.
    pub fn name(&self) -> String {
        let mut name = match self.kernel {
            // How x is read is said at the end.
            Kernel::MatvecPairs(store, _) => format!("matvecpairs({store:?})").to_lowercase(),
            Kernel::Matmul(store, _) => format!("matmul({store:?})").to_lowercase(),
            kernel => format!("{kernel:?}").to_lowercase(),
        };
        if let Some(ty) = self.ty {
            name += &format!(" {ty:?}");
        }
        if let Some(tpr) = self.threads_per_row {
            name += &format!(" wg{} tpr{tpr}", self.workgroup);
        }
        if let Some(tile) = self.tile() {
            name += &format!(" tile {}x{}", tile.rows, tile.tokens);
            if !tile.shared {
                name += " in registers";
            }
            if self.f16_tile {
                name += " f16";
            }
        }
        if self.subgroup_sum {
            name += " subgroup";
        }
        match self.split {
            Split::Chunks => {}
            Split::Blocks => name += " blocks",
            Split::BlockParts => name += " block-parts",
            Split::PartsQ8 => name += " block-parts q8",
        }
        if let (Some(tokens), None) = (self.tokens, self.tile()) {
            name += &format!(" x{tokens}");
        }
        if self.slot_size > 1 {
            name += &format!(" {} rows", self.rows_per_slot());
        }
        if self.wide {
            name += " wide";
        }
        if let XNorm::Rms(_) = self.kernel.x_norm() {
            name += " rms-normed";
        }
        name
    }

    fn constants(&self) -> Vec<(&'static str, f64)> {
        let mut c = vec![("WG", self.workgroup as f64)];
        if let Some(tpr) = self.threads_per_row {
            c.push(("TPR", tpr as f64));
        }
        if let (Some(tokens), Kernel::MatvecPairs(..)) = (self.tokens, self.kernel) {
            c.push(("TOKENS", tokens as f64));
        }
        if let XNorm::Rms(eps) = self.kernel.x_norm() {
            c.push(("NORM_EPS", f32::from_bits(eps) as f64));
        }
        match (self.kernel, self.tokens) {
            (Kernel::Matvec, _) => c.push(("ROWS", self.slot_size as f64)),
            (Kernel::MatvecPairs(..), None) => c.push(("PAIRS", self.slot_size as f64)),
            _ => {}
        }
        c
    }

    /// Whether its kernel shuffles values between a subgroup's lanes: a row summed so, or attention
    /// with its heads split over lanes.
    fn uses_subgroup_shuffles(&self) -> bool {
        self.subgroup_sum
            || matches!(
                self.kernel,
                Kernel::AttentionRows(..) | Kernel::AttentionSplitLanes(..)
            )
    }

    pub fn source(&self) -> String {
        let mut src = String::new();
        // WebGPU has a shader enable the subgroup operations it uses (naga takes them as they are,
        // and refuses the directive).
        if cfg!(target_arch = "wasm32") && self.uses_subgroup_shuffles() {
            src += "enable subgroups;\n";
        }
        if let Some(size) = self.kernel.cooperative_size() {
            // Directives come first. The matrices' loads, multiplies and stores run in subgroups
            // that branch apart by their subgroup id, uniform within each: what SPIR-V asks of them,
            // and what naga's analysis, which knows only the workgroup, cannot see.
            src += "enable f16;\nenable wgpu_cooperative_matrix;\n";
            src += "diagnostic(off, derivative_uniformity);\n";
            src += &format!("const S: u32 = {size}u;\n");
            if let Some(tile) = self.kernel.coop_tile() {
                src += &format!("const CHUNKS: u32 = {}u;\n", tile.chunks());
                src += &format!("const MB: u32 = {}u;\n", tile.matrices());
                src += &format!("const BUFFERS: u32 = {}u;\n", tile.buffers());
                src += &format!("const HELPED: bool = {};\n", tile.helped());
            }
            for (name, ty, role) in [
                ("MatA", "f16", "A"),
                ("MatB", "f16", "B"),
                ("MatC", "f32", "C"),
            ] {
                src += &format!("alias {name} = coop_mat{size}x{size}<{ty}, {role}>;\n");
            }
        }
        if let Some(tile) = self.tile() {
            src += &format!(
                "const TM: u32 = {}u;\nconst TN: u32 = {}u;\nconst RB: u32 = {}u;\n",
                tile.rows, tile.tokens, tile.rows_per_thread
            );
            // How the tile holds a vec4 in workgroup memory (shaders/matmul_tile.wgsl). A product
            // that norms x on the way in passes sums of squares through the tile, which f16 would
            // overflow (`MatvecShape::candidates` offers such products no f16 tile).
            src += match tile.f16 {
                true => {
                    assert_eq!(
                        self.kernel.x_norm(),
                        XNorm::None,
                        "an f16 tile that norms x"
                    );
                    include_str!("../../shaders/tile_f16.wgsl")
                }
                false => include_str!("../../shaders/tile_f32.wgsl"),
            };

            src += include_str!("../../shaders/tile.wgsl");
            src += match self.kernel.cooperative_size() {
                Some(_) => include_str!("../../shaders/matmul_coop_tile.wgsl"),
                None => tile.source(),
            };
        }
        if let Kernel::Attention(_) | Kernel::AttentionSplit(_) | Kernel::MlaAttention(_) =
            self.kernel
        {
            // Queries a workgroup takes (attend.wgsl): sizes of its arrays.
            src += &format!("const TQ: u32 = {}u;\n", self.tokens.unwrap_or(1));
        }
        if let Kernel::AttentionTiled(head_dim, _) = self.kernel {
            // A thread's query and output rows, and the keys a tile holds: 16 KiB of keys and values.
            let (vec4s, keys) = attention_tile(head_dim);
            src += &format!("const HD4: u32 = {vec4s}u;\nconst BK: u32 = {keys}u;\n");
        }
        if let Kernel::AttentionRows(head_dim, _, keys) = self.kernel {
            // The vec4s of a head, the keys of a tile and the queries of a workgroup size its arrays.
            let queries = self.tokens.expect("the rows form's key says its queries");
            let vec4s = head_dim / 4;
            src += &format!("const HD4: u32 = {vec4s}u;\nconst BC: u32 = {keys}u;\n");
            src += &format!("const BR: u32 = {queries}u;\n");
        }
        if let Kernel::MlaAttentionCoop(latent, rope, _, _, keys) = self.kernel {
            // The latent's and the rope part's widths and a tile's keys size its matrices' arrays
            // and its workgroup memory.
            src += &format!("const KL: u32 = {latent}u;\nconst NR: u32 = {rope}u;\n");
            src += &format!("const BK: u32 = {keys}u;\n");
        }
        if let Kernel::AttentionCoop(head_dim, _, _, keys) = self.kernel {
            // A head's dims and a tile's keys size its matrices' arrays and its workgroup memory.
            src += &format!("const HD: u32 = {head_dim}u;\nconst BK: u32 = {keys}u;\n");
        }
        if let Kernel::AttentionSplitLanes(head_dim, _, lanes, rows, keys) = self.kernel {
            // A head's vec4s, the lanes they are split over, the columns of keys, the keys a column
            // reads at once and the heads a workgroup takes size its arrays.
            let (vec4s, columns) = (head_dim / 4, self.workgroup / lanes);
            src += &format!("const HD4: u32 = {vec4s}u;\nconst DS: u32 = {lanes}u;\n");
            src += &format!("const CI: u32 = {columns}u;\nconst ROWS: u32 = {rows}u;\n");
            src += &format!("const KR: u32 = {keys}u;\n");
            // The tokens of a sequence a workgroup takes at once size them too.
            src += &format!("const TQ: u32 = {}u;\n", self.tokens.unwrap_or(1));
        }
        if let Kernel::DeltaNetChunks = self.kernel {
            // The chunk's tiles and a thread's column of the state are sized by these.
            let chunk = self
                .tokens
                .expect("a chunked recurrence's key says its chunk");
            src += &format!(
                "const CHUNK: u32 = {chunk}u;\nconst DIM: u32 = {}u;\n",
                self.workgroup
            );
        }
        if let Some(ty) = self.ty {
            src.push_str(match self.wide {
                true => wgsl!("dequant/words_vec4.wgsl"),
                false => wgsl!("dequant/words.wgsl"),
            });
            src.push_str(include_str!("../../shaders/dequant/bytes.wgsl"));
            if let Some(regroup) = Regroup::of(ty) {
                src += &regroup.shader_constants();
                src.push_str(wgsl!("dequant/regrouped.wgsl"));
            }
            src.push_str(dequant_source(ty, self.wide));
            if self.split == Split::PartsQ8 {
                let q8 = q8_source(ty, self.wide);
                src.push_str(q8.expect("a type with products on 8-bit x"));
            }
        }
        let row_sum = match self.subgroup_sum {
            false => include_str!("../../shaders/row_sum.wgsl"),
            true => include_str!("../../shaders/row_sum_subgroup.wgsl"),
        };
        if let Some((cols, rows)) = self.x_q8 {
            src += &format!("const XQ_COLS: u32 = {cols}u;\nconst XQ_TOKENS: u32 = {rows}u;\n");
        }
        let mut row_dot = row_dot_source(self.split).to_string();
        if let Kernel::MatvecPairs(..) = self.kernel {
            // What a slot of a row's threads takes of a run of several tokens: only the pipelines
            // that take four pairs carry that large function, its walk over the rows split as the
            // kernel's split says.
            row_dot += match (self.tokens, self.slot_size, self.split) {
                (_, 1, _) => wgsl!("slot_pair.wgsl"),
                (Some(_), 4, Split::BlockParts) => {
                    wgsl!("slot_eight_rows.wgsl", "eight_rows_parts.wgsl")
                }
                (Some(_), 4, _) => wgsl!("slot_eight_rows.wgsl", "eight_rows_chunks.wgsl"),
                // One token's two pairs are matvec_pairs.wgsl's own (`PAIRS`); plans take no
                // other size (`MatvecShape::has_slot`).
                (None, 2, _) => wgsl!("slot_pair.wgsl"),
                (tokens, size, _) => panic!("no slot of {size} pairs for {tokens:?} tokens"),
            };
        }
        src.push_str(&self.kernel.body(&row_dot, row_sum));
        src
    }
}

/// The row_dot file of a split of rows over threads (`row_dot`, `pair_dot`, `pair_dot4`), and what
/// it prepares of x (`x_prepare`, `x_prepare4`) and which threads read x once for a row
/// (`x_read_sum`, `x_read_sum4`).
fn row_dot_source(split: Split) -> &'static str {
    match split {
        Split::Chunks => wgsl!("row_dot.wgsl", "row_dot_f32x.wgsl"),
        Split::Blocks => wgsl!("row_dot_blocks.wgsl", "row_dot_f32x.wgsl"),
        Split::BlockParts => wgsl!("row_dot_parts.wgsl", "row_dot_f32x.wgsl"),
        Split::PartsQ8 => wgsl!("reduce.wgsl", "row_dot_q8.wgsl"),
    }
}

/// Every kernel built on a device, by key. Building one (naga's translation, then the driver's
/// compiler) costs milliseconds on a GPU and up to a fifth of a second on a CPU adapter, and the
/// tuner builds hundreds: `Gpu::build_pipelines` builds many at once.
#[derive(Default)]
pub struct Pipelines {
    cache: Mutex<HashMap<PipelineKey, Arc<wgpu::ComputePipeline>>>,
}

impl Pipelines {
    /// The pipeline of `key`, built now where it was not built yet. A device's refusal to build it
    /// goes to the caller's error scope (`Gpu::checked`); `Gpu::build_pipelines` keeps a refused
    /// pipeline out of the cache.
    pub fn get(&self, device: &wgpu::Device, key: PipelineKey) -> Arc<wgpu::ComputePipeline> {
        if let Some(built) = self.built(&key) {
            return built;
        }
        let pipeline = Arc::new(create(device, key));
        self.keep(key, pipeline)
    }

    /// The pipeline of `key`, where it was built.
    pub fn built(&self, key: &PipelineKey) -> Option<Arc<wgpu::ComputePipeline>> {
        self.lock().get(key).cloned()
    }

    /// Keeps `pipeline` as the one of `key`, unless one was kept meanwhile (built on another thread
    /// at the same time): returns the one kept.
    pub(super) fn keep(
        &self,
        key: PipelineKey,
        pipeline: Arc<wgpu::ComputePipeline>,
    ) -> Arc<wgpu::ComputePipeline> {
        self.lock().entry(key).or_insert(pipeline).clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PipelineKey, Arc<wgpu::ComputePipeline>>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Builds the pipeline of `key` (with no cache: `Pipelines` is that).
fn create(device: &wgpu::Device, key: PipelineKey) -> wgpu::ComputePipeline {
    let label = format!("{key:?}");
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(&label),
        source: wgpu::ShaderSource::Wgsl(key.source().into()),
    };
    // Bounds checks stay; the loop bounding that naga otherwise adds to every loop (a counter that
    // breaks out of a loop running "forever") goes: it keeps drivers from unrolling the kernels'
    // inner loops, and on an H100 through Vulkan decode ran 2.3x to 5.8x slower with it
    // (BENCHMARKS.md). Safe because every loop in shaders/ ends whatever its parameters: each steps
    // toward its bound by a constant or by an override constant of at least 1 (WG, TPR), or halves a
    // count down to 0. A new loop must too. (The browser's WebGPU ignores these options and checks
    // for itself.)
    let checks = wgpu::ShaderRuntimeChecks {
        force_loop_bounding: false,
        ..wgpu::ShaderRuntimeChecks::checked()
    };
    #[allow(unsafe_code)]
    let module = unsafe { device.create_shader_module_trusted(desc, checks) };
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(&label),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants: &key.constants(),
            zero_initialize_workgroup_memory: false,
        },
        cache: None,
    })
}

/// The most threads that build pipelines at once: a driver's compiler takes memory as well as a
/// core, and a tuner's shape has a few dozen candidates.
const MOST_BUILDING_THREADS: usize = 8;

impl Gpu {
    /// Threads that build pipelines at once (`build_pipelines`): natively up to
    /// `MOST_BUILDING_THREADS` of the machine's cores; in the browser one.
    pub fn building_threads(&self) -> usize {
        match cfg!(target_arch = "wasm32") {
            true => 1,
            false => std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(MOST_BUILDING_THREADS),
        }
    }

    /// Builds the pipelines of `keys` not built yet, all at once: on `building_threads` threads
    /// (each build is work of its own: naga's translation, then the driver's compiler). Those the
    /// device refuses (a validation error, a driver that cannot compile it) are not kept: returns
    /// them, with why.
    pub async fn build_pipelines(&self, keys: &[PipelineKey]) -> Vec<(PipelineKey, GpuError)> {
        let mut missing: Vec<PipelineKey> = Vec::new();
        for &key in keys {
            if self.pipelines.built(&key).is_none() && !missing.contains(&key) {
                missing.push(key);
            }
        }
        #[cfg(not(target_arch = "wasm32"))]
        if self.building_threads() > 1 && missing.len() > 1 {
            return self.build_on_threads(&missing);
        }
        // One error scope for them all: in the browser each scope's answer is a wait on the page's
        // event loop. Where one was refused, each again in a scope of its own, to know which.
        let all = self.checked("building kernels", || {
            (missing.iter())
                .map(|&key| create(&self.device, key))
                .collect::<Vec<_>>()
        });
        if let Ok(built) = all.await {
            for (key, pipeline) in missing.into_iter().zip(built) {
                self.pipelines.keep(key, Arc::new(pipeline));
            }
            return Vec::new();
        }
        let mut refused = Vec::new();
        for key in missing {
            if let Err(e) = self.build_pipeline(key).await {
                refused.push((key, e));
            }
        }
        refused
    }

    /// `build_pipelines` natively on `building_threads` threads, each taking the next key left.
    #[cfg(not(target_arch = "wasm32"))]
    fn build_on_threads(&self, keys: &[PipelineKey]) -> Vec<(PipelineKey, GpuError)> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let next = AtomicUsize::new(0);
        let refused = Mutex::new(Vec::new());
        // Error scopes are each thread's own: each thread's builds are checked in its own.
        std::thread::scope(|scope| {
            for _ in 0..self.building_threads().min(keys.len()) {
                scope.spawn(|| {
                    while let Some(&key) = keys.get(next.fetch_add(1, Ordering::Relaxed)) {
                        if let Err(e) = pollster::block_on(self.build_pipeline(key)) {
                            let mut refused = refused.lock().unwrap_or_else(|e| e.into_inner());
                            refused.push((key, e));
                        }
                    }
                });
            }
        });
        refused.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// Builds the pipeline of `key` and keeps it, where the device builds it.
    async fn build_pipeline(&self, key: PipelineKey) -> Result<(), GpuError> {
        let what = format!("building the {:?} kernel", key.kernel);
        let pipeline = self.checked(&what, || create(&self.device, key)).await?;
        self.pipelines.keep(key, Arc::new(pipeline));
        Ok(())
    }
}

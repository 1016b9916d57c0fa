//! A model larger than what the adapter allows in one buffer: split across bindings where a row fits,
//! a clear error naming the limit where one does not. Lower limits stand in for a smaller adapter.

use crate::common;

use common::watched_source::WatchedSource;
use common::{model_path, options};
use pollster::FutureExt as _;
use std::sync::Arc;
use wick::engine::Engine;
use wick::gguf::FileSource;
use wick::gpu::Gpu;

/// The GPU with its buffer and binding limits lowered to `bytes`, or None where there is none.
fn gpu_limited_to(bytes: u32) -> Option<Arc<Gpu>> {
    common::gpu()?;
    Some(
        pollster::block_on(Gpu::with_limits(|l| wgpu::Limits {
            max_storage_buffer_binding_size: bytes as u64,
            max_buffer_size: bytes as u64,
            ..l
        }))
        .unwrap(),
    )
}

fn load(gpu: Arc<Gpu>) -> Result<Engine, wick::Error> {
    let source = FileSource::open(model_path()).unwrap();
    Engine::load(gpu, &source, &options(16), &mut |_, _| {}).block_on()
}

#[test]
fn a_row_larger_than_a_binding_is_refused_by_name() {
    let Some(gpu) = gpu_limited_to(256) else {
        return;
    };
    let err = load(gpu)
        .err()
        .expect("a 256-byte binding limit cannot hold a row")
        .to_string();
    eprintln!("{err}");
    assert!(err.contains("does not fit"), "{err}");
    assert!(err.contains("limit of 256 bytes"), "{err}");
    assert!(err.contains("token_embd.weight"), "{err}");
}

#[test]
fn tensors_split_across_bindings_give_the_same_logits() {
    let Some(gpu) = common::gpu() else { return };
    // 4 MiB: the 30 MB output head and embedding go in 8 parts, the 1536-wide matrices in one or two.
    let small = gpu_limited_to(4 << 20).unwrap();
    let prompt = [504, 3575, 282, 4649, 314];
    let whole = load(gpu).unwrap().prefill(&prompt).block_on().unwrap();
    let split = load(small).unwrap().prefill(&prompt).block_on().unwrap();
    assert_eq!(whole, split);
}

/// What the GPU holds once the work submitted so far is done.
fn settled_memory(gpu: &Gpu) -> wick::gpu::GpuMemory {
    let _ = gpu.device.poll(wgpu::PollType::wait_indefinitely());
    gpu.memory()
}

/// What a failed load allocated is freed. wgpu keeps a staging buffer or two of its own, which come
/// and go: compare with the empty device.
fn assert_freed(gpu: &Gpu, empty: &wick::gpu::GpuMemory) {
    let after = settled_memory(gpu);
    assert!(
        after.buffers <= empty.buffers && after.buffer_bytes <= empty.buffer_bytes,
        "what the load allocated is freed: {after:?}, before the load {empty:?}"
    );
}

/// The tiny model's file, read through a source that counts the bytes read from its data section.
fn tiny() -> (WatchedSource, wick::gguf::Header) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/random-llama-chat.gguf");
    WatchedSource::open(&path)
}

#[test]
fn a_model_the_adapter_cannot_hold_is_refused_before_its_weights_are_read() {
    // The tiny model's weights split into 64 KiB bindings, but its KV cache at a 256-token context
    // needs 128 KiB in one. Every buffer is allocated before any weight is read, so the refusal
    // comes having read the header and the small vectors (norms) alone, and leaves nothing behind.
    let Some(gpu) = gpu_limited_to(64 << 10) else {
        return;
    };
    let (source, header) = tiny();
    let vector_bytes: u64 = header
        .tensors
        .iter()
        .filter(|t| t.rows() == 1)
        .map(|t| t.bytes())
        .sum();
    let weight_bytes: u64 = header.tensors.iter().map(|t| t.bytes()).sum();
    let empty = settled_memory(&gpu);
    let err = Engine::load_with_header(
        gpu.clone(),
        header.clone(),
        &source,
        &options(256),
        &mut |_, _| {},
    )
    .block_on()
    .err()
    .expect("a 64 KiB limit cannot hold the cache")
    .to_string();
    let read = source.data_read.get();
    eprintln!("{read} of {weight_bytes} bytes of weights read: {err}");
    assert!(err.contains("does not fit"), "{err}");
    assert!(err.contains("k_cache"), "{err}");
    assert!(err.contains("limit of 65536 bytes"), "{err}");
    assert!(
        read <= vector_bytes && vector_bytes * 20 < weight_bytes,
        "{read} bytes of weights read; the vectors alone are {vector_bytes}"
    );
    assert_freed(&gpu, &empty);
    // With room for the cache, the same source loads whole.
    let Some(roomy) = gpu_limited_to(1 << 20) else {
        return;
    };
    source.data_read.set(0);
    Engine::load_with_header(roomy, header, &source, &options(256), &mut |_, _| {})
        .block_on()
        .unwrap();
    assert!(source.data_read.get() >= weight_bytes - vector_bytes);
}

#[test]
fn a_download_that_fails_halfway_leaves_nothing_on_the_gpu() {
    // Every buffer is allocated, half the weights are written, then the source fails: the error says
    // so, and what the load allocated is freed.
    let Some(gpu) = gpu_limited_to(64 << 20) else {
        return;
    };
    let (mut source, header) = tiny();
    let data = header.data_offset;
    source.fail_from = data + (wick::gguf::ByteSource::len(&source) - data) / 2;
    let empty = settled_memory(&gpu);
    let mut loaded = 0;
    let err = Engine::load_with_header(
        gpu.clone(),
        header,
        &source,
        &options(64),
        &mut |done, _| loaded = done,
    )
    .block_on()
    .err()
    .expect("the source fails halfway")
    .to_string();
    eprintln!("after {loaded} bytes: {err}");
    assert!(err.contains("connection lost"), "{err}");
    assert!(err.contains("reading blk."), "the tensor is named: {err}");
    assert!(
        loaded > 100_000,
        "weights were written first ({loaded} bytes)"
    );
    assert_freed(&gpu, &empty);
}

/// Wick's kernels bind up to `STORAGE_BUFFERS_PER_KERNEL` storage buffers (compatibility-mode WebGPU
/// guarantees only 4): an adapter that grants that many runs a prompt's chunk and decode steps, and one
/// that grants fewer is refused by name when the GPU is opened, before any pipeline fails validation.
#[test]
fn storage_buffers_per_kernel_are_checked_when_the_gpu_opens() {
    if common::gpu().is_none() {
        return;
    }
    let needed = wick::gpu::STORAGE_BUFFERS_PER_KERNEL;
    let granting = |n: u32| {
        pollster::block_on(Gpu::with_limits(|l| wgpu::Limits {
            max_storage_buffers_per_shader_stage: n,
            ..l
        }))
    };
    let err = granting(needed - 1).err().expect("too few").to_string();
    assert!(
        err.contains(&format!("allows {} storage buffers", needed - 1)),
        "{err}"
    );
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/random-llama-chat.gguf");
    let source = FileSource::open(path).unwrap();
    let gpu = granting(needed).unwrap();
    let mut engine = Engine::load(gpu, &source, &options(64), &mut |_, _| {})
        .block_on()
        .unwrap();
    let logits = engine.prefill(&[1, 50, 300, 7, 99]).block_on().unwrap();
    assert!(logits.iter().all(|x| x.is_finite()));
    let next = engine.step(3, true).block_on().unwrap().unwrap();
    assert!(next.iter().all(|x| x.is_finite()));
}

/// Wick's workgroups run up to `THREADS_PER_WORKGROUP` threads (compatibility-mode WebGPU and Vulkan
/// guarantee only 128): an adapter that runs fewer is refused by name when the GPU is opened, where
/// natively a kernel too wide would reach the driver unchecked.
#[test]
fn threads_per_workgroup_are_checked_when_the_gpu_opens() {
    if common::gpu().is_none() {
        return;
    }
    let needed = wick::gpu::THREADS_PER_WORKGROUP;
    let err = pollster::block_on(Gpu::with_limits(|l| wgpu::Limits {
        max_compute_invocations_per_workgroup: needed / 2,
        ..l
    }))
    .err()
    .expect("too few")
    .to_string();
    assert!(
        err.contains(&format!("runs {} threads", needed / 2)),
        "{err}"
    );
    let err = pollster::block_on(Gpu::with_limits(|l| wgpu::Limits {
        max_compute_workgroup_size_x: needed - 1,
        ..l
    }))
    .err()
    .expect("too few")
    .to_string();
    assert!(
        err.contains(&format!("runs {} threads", needed - 1)),
        "{err}"
    );
    assert!(pollster::block_on(Gpu::with_limits(|l| wgpu::Limits {
        max_compute_invocations_per_workgroup: needed,
        max_compute_workgroup_size_x: needed,
        ..l
    }))
    .is_ok());
}

//! One engine, four hundred short completions: nothing grows. GPU objects as wgpu counts them
//! (Gpu::memory), host memory as Linux counts it (resident pages of this process).

mod common;

use common::{gpu, tiny_chat_session};
use pollster::FutureExt as _;
use wick::reply::Reply;
use wick::sampler::{Sampler, SamplerConfig};

/// Resident bytes of this process, from /proc (None elsewhere).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[test]
fn four_hundred_completions_leave_gpu_and_host_memory_as_they_were() {
    let Some(gpu) = gpu() else { return };
    let mut session = tiny_chat_session(gpu.clone(), 64).unwrap();
    let mut run = |i: u64| {
        // Prompts that share a prefix with the last one or not, so the cache is reused and rewound.
        let prompt: Vec<u32> = (0..3 + i % 5)
            .map(|j| ((i * 7 + j * 13) % 200) as u32 + 1)
            .collect();
        let mut sampler = Sampler::new(SamplerConfig {
            temperature: 0.8,
            top_k: 0,
            top_p: 0.95,
            min_p: 0.0,
            repeat_penalty: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            repeat_last_n: 0,
            seed: i,
            logit_bias: Vec::new(),
        });
        let c = session
            .complete(
                &prompt,
                Reply::new(1 + (i % 2) as usize, &[]),
                &mut sampler,
                &mut |_| true,
            )
            .block_on()
            .unwrap();
        assert!(!c.tokens.is_empty() || c.finish == wick::reply::FinishReason::Stop);
    };
    for i in 0..50 {
        run(i);
    }
    let (gpu_before, host_before) = (gpu.memory(), resident_bytes());
    let start = std::time::Instant::now();
    for i in 50..450 {
        run(i);
    }
    let (gpu_after, host_after) = (gpu.memory(), resident_bytes());
    eprintln!(
        "400 completions in {:.1} s; GPU before {gpu_before:?}, after {gpu_after:?}; resident host \
         memory before {:.1} MB, after {:.1} MB",
        start.elapsed().as_secs_f64(),
        host_before.unwrap_or(0) as f64 / 1e6,
        host_after.unwrap_or(0) as f64 / 1e6,
    );
    assert!(
        gpu_before.buffers > 0,
        "wgpu counts buffers: {gpu_before:?}"
    );
    assert_eq!(gpu_after.buffers, gpu_before.buffers);
    assert_eq!(gpu_after.buffer_bytes, gpu_before.buffer_bytes);
    assert!(
        gpu_after.bind_groups <= gpu_before.bind_groups + 8,
        "{gpu_after:?}"
    );
    if let (Some(before), Some(after)) = (host_before, host_after) {
        assert!(
            after < before + (8 << 20),
            "resident memory grew from {before} to {after} bytes"
        );
    }
}

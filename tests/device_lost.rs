//! A lost device (simulated with `device.destroy()`, as a GPU reset or driver crash would leave it):
//! every call after it says so, and a new device loads the model again in the same process.

mod common;

use common::gpu;
use pollster::FutureExt as _;
use wick::engine::LoadOptions;
use wick::gguf::FileSource;
use wick::gpu::Gpu;
use wick::sampler::{Sampler, SamplerConfig};
use wick::session::Session;

fn greedy() -> Sampler {
    Sampler::new(SamplerConfig {
        temperature: 0.0,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.0,
        repeat_penalty: 1.0,
        repeat_last_n: 0,
        seed: 0,
    })
}

fn tiny(gpu: std::sync::Arc<Gpu>) -> Result<Session, wick::Error> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/random-llama-chat.gguf");
    let source = FileSource::open(path).unwrap();
    Session::load(gpu, &source, &LoadOptions { n_ctx: 64 }, &mut |_, _| {}).block_on()
}

#[test]
fn a_lost_device_is_reported_and_a_new_one_loads_again() {
    let Some(gpu) = gpu() else { return };
    let mut session = tiny(gpu.clone()).unwrap();
    let before = session
        .complete(&[1, 2, 3], 4, &[], &mut greedy(), &mut |_| true)
        .block_on()
        .unwrap();

    gpu.device.destroy();
    let _ = gpu.device.poll(wgpu::PollType::Poll);
    let err = session
        .complete(&[1, 2, 3, 4], 4, &[], &mut greedy(), &mut |_| true)
        .block_on()
        .unwrap_err();
    assert!(err.to_string().contains("GPU device was lost"), "{err}");
    let err = tiny(gpu.clone())
        .err()
        .expect("loading on a lost device fails");
    assert!(err.to_string().contains("GPU device was lost"), "{err}");
    drop(session);

    let gpu = Gpu::new().block_on().unwrap();
    let mut session = tiny(gpu).unwrap();
    let after = session
        .complete(&[1, 2, 3], 4, &[], &mut greedy(), &mut |_| true)
        .block_on()
        .unwrap();
    assert_eq!(after.tokens, before.tokens);
}

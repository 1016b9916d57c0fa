//! A lost device (simulated with `device.destroy()`, as a GPU reset or driver crash would leave it):
//! every call after it says so, and a new device loads the model again in the same process.

use crate::common;

use common::{gpu, greedy, tiny_chat_session};
use pollster::FutureExt as _;
use wick::gpu::Gpu;
use wick::reply::Reply;

#[test]
fn a_lost_device_is_reported_and_a_new_one_loads_again() {
    let Some(gpu) = gpu() else { return };
    let mut session = tiny_chat_session(gpu.clone(), 64).unwrap();
    let before = session
        .complete(&[1, 2, 3], Reply::new(4, &[]), &mut greedy(), &mut |_| true)
        .block_on()
        .unwrap();

    gpu.device.destroy();
    let _ = gpu.device.poll(wgpu::PollType::Poll);
    let err = session
        .complete(
            &[1, 2, 3, 4],
            Reply::new(4, &[]),
            &mut greedy(),
            &mut |_| true,
        )
        .block_on()
        .unwrap_err();
    assert!(err.to_string().contains("GPU device was lost"), "{err}");
    let err = tiny_chat_session(gpu.clone(), 64)
        .err()
        .expect("loading on a lost device fails");
    assert!(err.to_string().contains("GPU device was lost"), "{err}");
    drop(session);

    let gpu = Gpu::new().block_on().unwrap();
    let mut session = tiny_chat_session(gpu, 64).unwrap();
    let after = session
        .complete(&[1, 2, 3], Reply::new(4, &[]), &mut greedy(), &mut |_| true)
        .block_on()
        .unwrap();
    assert_eq!(after.tokens, before.tokens);
}

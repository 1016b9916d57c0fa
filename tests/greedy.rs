//! A greedy step picks its token on the GPU (`Engine::step_greedy`, 4 bytes read back): the same token as
//! the CPU's argmax over the step's logits, at every position of a run.

use crate::common;

use common::{gpu, tiny_chat_session};
use pollster::FutureExt as _;

#[test]
fn greedy_steps_pick_the_cpu_argmax() {
    let Some(gpu) = gpu() else { return };
    let mut session = tiny_chat_session(gpu, 64).unwrap();
    let engine = &mut session.engine;
    let mut token = 1;
    for pos in 0..40 {
        let logits = engine.step(token, true).block_on().unwrap().unwrap();
        engine.rewind(pos);
        let chosen = engine.step_greedy(token).block_on().unwrap();
        assert_eq!(chosen, wick::sampler::argmax(&logits), "position {pos}");
        token = chosen;
    }
}

//! Kernel-shape tuning, one candidate at a time. `Engine::tuner` lists the matvec shapes to time,
//! each `Engine::tune_step` times one candidate kernel shape of one of them, and a shape's winner goes
//! to the GPU and to the engine's plans as soon as its last candidate is timed. A caller with other
//! work runs the steps in between (the browser's worker answers requests first and tunes when idle);
//! `Engine::tune` runs them all.

use super::profile::time_dispatch;
use super::Engine;
use crate::gpu::{MatvecKernel, MatvecShape, Tuning};
use crate::Error;
use std::collections::VecDeque;
use web_time::Duration;

/// How long the dispatches of one candidate's timing submit run together, at least.
const TUNE_BATCH: Duration = Duration::from_millis(2);

/// Which shapes `Engine::tune` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TuneShapes {
    /// Every shape of the model, again where it has a winner already.
    All,
    /// Only the shapes with no winner yet: tuning once per shape.
    New,
}

/// One matvec shape's tuning: its kernel shape and the time of one dispatch, as it was and as it is
/// best.
#[derive(Clone, Debug)]
pub struct Tuned {
    pub shape: MatvecShape,
    pub before: (MatvecKernel, Duration),
    pub after: (MatvecKernel, Duration),
}

/// A tuning under way: the shapes still to time and the candidates of the one being timed.
pub struct Tuner {
    subgroup_size: Option<u32>,
    waiting: VecDeque<MatvecShape>,
    current: Option<Timing>,
    done: Vec<Tuned>,
    /// Shapes to time in all.
    pub shapes: usize,
    /// Candidates to time in all, over every shape, and how many are timed.
    pub candidates: usize,
    pub timed: usize,
}

/// One shape's candidates: those left (the next last) and the times of those timed.
struct Timing {
    shape: MatvecShape,
    left: Vec<MatvecKernel>,
    times: Vec<(MatvecKernel, Duration)>,
}

impl Tuner {
    pub fn finished(&self) -> bool {
        self.current.is_none() && self.waiting.is_empty()
    }

    /// The shapes whose winners are in, in the order they were timed.
    pub fn tuned(&self) -> &[Tuned] {
        &self.done
    }
}

impl Engine {
    /// The plans' matvec shapes the GPU's tuning has no winner for.
    pub fn untuned_shapes(&self) -> Vec<MatvecShape> {
        let tuning = self.gpu.tuning();
        let mut shapes = self.matvec_shapes();
        shapes.retain(|s| !tuning.matvec.contains_key(&s.key()));
        shapes
    }

    /// The plans' matvec shapes (the decode step's, then those of a step of several sequences), each
    /// once, in plan order.
    fn matvec_shapes(&self) -> Vec<MatvecShape> {
        let mut shapes: Vec<MatvecShape> = Vec::new();
        for plan in self.forward.plans() {
            for shape in plan.dispatches.iter().filter_map(|d| d.matvec) {
                if !shapes.contains(&shape) {
                    shapes.push(shape);
                }
            }
        }
        shapes
    }

    /// What timing `which` shapes on this adapter takes. The largest matrices come first: they take
    /// most of a token's time, so a tuning cut short has already bought most of what it could.
    pub async fn tuner(&self, which: TuneShapes) -> Result<Tuner, Error> {
        let mut shapes = match which {
            TuneShapes::All => self.matvec_shapes(),
            TuneShapes::New => self.untuned_shapes(),
        };
        shapes.sort_by_key(|s| std::cmp::Reverse(s.cols as u64 * s.rows as u64));
        let subgroup_size = match self.gpu.subgroup_size {
            Some(lanes)
                if !shapes.is_empty()
                    && crate::ops::matvec::subgroup_sums_work(&self.gpu).await? =>
            {
                Some(lanes)
            }
            _ => None,
        };
        Ok(Tuner {
            subgroup_size,
            shapes: shapes.len(),
            candidates: shapes
                .iter()
                .map(|s| s.candidates(subgroup_size).len())
                .sum(),
            timed: 0,
            waiting: shapes.into(),
            current: None,
            done: Vec::new(),
        })
    }

    /// Times the tuner's next candidate; where that was its shape's last, the shape's winner goes to
    /// the GPU (for plans made from now on) and to this engine's plans. Returns whether candidates
    /// are left. The activations are overwritten on the way; of the KV cache, only the next row, which
    /// the next step writes again.
    pub async fn tune_step(&mut self, tuner: &mut Tuner) -> Result<bool, Error> {
        if tuner.current.is_none() {
            let Some(shape) = tuner.waiting.pop_front() else {
                return Ok(false);
            };
            let mut left = shape.candidates(tuner.subgroup_size);
            left.reverse();
            tuner.current = Some(Timing {
                shape,
                left,
                times: Vec::new(),
            });
        }
        let timing = tuner.current.as_mut().expect("a shape being timed");
        let candidate = timing.left.pop().expect("a shape with candidates left");
        self.write_scratch_step(timing.shape.tokens);
        let (plan, d) = (self.forward.plans())
            .find_map(|plan| {
                let d = plan
                    .dispatches
                    .iter()
                    .find(|d| d.matvec == Some(timing.shape));
                d.map(|d| (plan, d))
            })
            .expect("a shape of a plan");
        let (pipeline, bind_group, workgroups) = plan.reshaped(&self.gpu, d, candidate);
        let time = time_dispatch(&self.gpu, &pipeline, &bind_group, workgroups, TUNE_BATCH).await?;
        timing.times.push((candidate, time));
        tuner.timed += 1;
        if timing.left.is_empty() {
            let timing = tuner.current.take().expect("a shape being timed");
            tuner.done.push(self.keep_winner(timing));
        }
        Ok(!tuner.finished())
    }

    /// Makes a timed shape's fastest candidate the one the GPU and this engine's plans use.
    fn keep_winner(&mut self, timing: Timing) -> Tuned {
        let Timing { shape, times, .. } = timing;
        let mut tuning: Tuning = (*self.gpu.tuning()).clone();
        let current = tuning.matvec(&shape);
        let (best, best_time) = *times.iter().min_by_key(|(_, t)| *t).expect("candidates");
        let before = times.iter().find(|(c, _)| *c == current).map(|&(_, t)| t);
        tuning.matvec.insert(shape.key(), best);
        self.gpu.set_tuning(tuning.clone());
        for plan in self.forward.plans_mut() {
            plan.retune(&self.gpu, &tuning);
        }
        Tuned {
            shape,
            before: (current, before.unwrap_or(best_time)),
            after: (best, best_time),
        }
    }

    /// Times `which` matvec shapes of the decode step on this adapter at every candidate kernel
    /// shape, and gives the winners to the GPU and to this engine's plans. Returns the GPU's tuning
    /// with them, and each timed shape's time before and after.
    pub async fn tune(&mut self, which: TuneShapes) -> Result<(Tuning, Vec<Tuned>), Error> {
        let mut tuner = self.tuner(which).await?;
        while self.tune_step(&mut tuner).await? {}
        Ok(((*self.gpu.tuning()).clone(), tuner.done))
    }
}

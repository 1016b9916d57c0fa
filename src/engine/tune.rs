//! Kernel-shape tuning, one candidate at a time. `Engine::tuner` lists the shapes to time (matvecs',
//! and prompt plans' recurrences and attentions), each `Engine::tune_step` times one candidate
//! kernel of one of them, and a shape's winner goes to the GPU and to the engine's plans as soon as
//! its last candidate is timed. A caller with other work runs the steps in between (the browser's worker answers requests
//! first and tunes when idle); `Engine::tune` runs them all.
//!
//! A dispatch timed alone runs again and again on the same weights, which stay in the caches; in a
//! step it reads them after the rest of the model. The two can disagree: on a CPU-backed adapter a
//! kernel whose threads each walk a row of their own ran a 4-token product in half the time of the
//! others alone and in twice its own time in the plan. So where the adapter writes timestamps between
//! dispatches, the last steps time each shape's few fastest candidates (and the kernel shape it had)
//! again where they run, in whole runs of the plan, and the fastest there wins.

use super::profile::{dispatch_times, time_dispatch, Swap};
use super::tune_rounds::{first_round, second_round};
use super::Engine;
use crate::gpu::{chunk_timed_at, GpuError, Offers, Plan, Split, Tunable, Tuning};
use crate::gpu::{AttentionForm, AttentionShape, Choice, Kernel, MatvecKernel, MatvecShape};
use crate::Error;
use std::collections::VecDeque;
use web_time::{Duration, Instant};

/// How long the dispatches of one candidate's timing submit run together, at least.
const TUNE_BATCH: Duration = Duration::from_millis(2);

/// The candidates of a shape timed again in the plan: the fastest this many alone, and the kernel
/// shape the shape had.
const FINALISTS: usize = 3;

/// Rounds of finals: round k times every shape's k-th finalist (the fastest alone, then the kernel
/// shape it had) in runs of the plans that hold it.
const FINAL_ROUNDS: usize = FINALISTS + 1;

/// Which shapes `Engine::tune` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TuneShapes {
    /// Every shape of the model, again where it has a winner already.
    All,
    /// Only the shapes with no winner yet: tuning once per shape.
    New,
}

/// One shape's tuning: its kernel and the time of one dispatch, as it was and as it is best; every
/// candidate's time alone and, where its finalists were timed in runs of the plan, theirs there
/// (the figures a kernel's design is judged by); and the candidates the device would not build,
/// with why.
#[derive(Clone, Debug)]
pub struct Tuned {
    pub shape: Tunable,
    pub before: (Choice, Duration),
    pub after: (Choice, Duration),
    pub alone: Vec<(Choice, Duration)>,
    pub in_plan: Vec<(Choice, Duration)>,
    pub refused: Vec<(Choice, String)>,
}

/// A plan's products by what they multiply: a prompt's chunk (tiles, `Kernel::Matmul`) or a step's
/// few tokens (matvecs).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Products {
    Prompt,
    Step,
}

/// A tuning under way: the shapes still to time and the candidates of the one being timed.
pub struct Tuner {
    /// What the device offers, of subgroups and matrix cores only what works there
    /// (`ops::matvec::subgroup_sums_work`, `ops::matvec::matrix_cores_work`).
    offers: Offers,
    waiting: VecDeque<Tunable>,
    current: Option<Timing>,
    done: Vec<Tuned>,
    /// Shapes whose candidates were all timed alone, waiting to have their finalists timed in the
    /// plan (where the adapter writes timestamps between dispatches).
    finals: Vec<Final>,
    /// Rounds of finals run.
    rounds: usize,
    /// Whether each shape's candidates are all timed, rather than in two rounds (tune_rounds.rs).
    every_candidate: bool,
    /// Shapes to time in all.
    pub shapes: usize,
    /// Candidates to time in all, over every shape (at first every candidate offered; each shape's
    /// second round takes off those it leaves out, tune_rounds.rs), and how many are timed.
    pub candidates: usize,
    pub timed: usize,
    /// Where the tuning's time went.
    pub spent: TuneTimes,
}

/// Where a tuning's time went: checking what the device's subgroups and matrix cores give before
/// offering kernels that use them, building the candidates, timing each alone (binding it and the
/// scratch it runs on included), and timing the finalists in runs of their plans. The rest of a
/// caller's time is its own (reading and keeping the tuning file, say).
#[derive(Clone, Copy, Debug, Default)]
pub struct TuneTimes {
    pub checks: Duration,
    pub building: Duration,
    pub alone: Duration,
    pub in_plans: Duration,
}

impl std::fmt::Display for TuneTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let s = |d: Duration| d.as_secs_f64();
        write!(
            f,
            "checks {:.1} s, building kernels {:.1} s, timing them alone {:.1} s, in their plans {:.1} s",
            s(self.checks),
            s(self.building),
            s(self.alone),
            s(self.in_plans)
        )
    }
}

/// One shape's candidates: those left of this round (the next last), those held back for the
/// second, whether those left are built, and the times of those timed.
struct Timing {
    shape: Tunable,
    left: Vec<Choice>,
    held: Vec<Choice>,
    built: bool,
    times: Vec<(Choice, Duration)>,
    refused: Vec<(Choice, String)>,
}

/// A matvec shape's finalists (the kernel shape it had last) and each one's time in the plan, a
/// dispatch's mean.
struct Final {
    shape: MatvecShape,
    kernels: Vec<MatvecKernel>,
    times: Vec<Option<Duration>>,
}

impl Tuner {
    pub fn finished(&self) -> bool {
        self.current.is_none() && self.waiting.is_empty() && self.finals.is_empty()
    }

    /// The shapes whose winners are in, in the order they were timed.
    pub fn tuned(&self) -> &[Tuned] {
        &self.done
    }

    /// Times every candidate of each shape, in one round (what `wick tune` asks), rather than each
    /// form at one workgroup size first. Before the first step.
    pub fn every_candidate(self) -> Tuner {
        Tuner {
            every_candidate: true,
            ..self
        }
    }
}

impl Engine {
    /// The plans' tunable shapes the GPU's tuning has no winner for that plans may use (`usable`).
    pub fn untuned_shapes(&self) -> Vec<Tunable> {
        self.shapes_tuned(false)
    }

    /// The plans' tunable shapes with a winner plans may use: with `untuned_shapes`, every shape
    /// of this model's plans (the adapter's tuning may hold other models' shapes beside them).
    pub fn tuned_shapes(&self) -> Vec<Tunable> {
        self.shapes_tuned(true)
    }

    fn shapes_tuned(&self, tuned: bool) -> Vec<Tunable> {
        let tuning = self.gpu.usable(self.gpu.tuning());
        let mut shapes = self.tunables();
        shapes.retain(|s| tuning.has(s) == tuned);
        shapes
    }

    /// Of the plans' prompt products (`Kernel::Matmul` shapes), how many run on the matrix cores,
    /// and how many there are.
    pub fn products_on_matrix_cores(&self) -> (usize, usize) {
        self.products_in(Products::Prompt, |k| k.cooperative.is_some())
    }

    /// Of the plans' prompt products, how many hold their tiles in f16, and how many there are.
    pub fn products_in_f16_tiles(&self) -> (usize, usize) {
        self.products_in(Products::Prompt, |k| k.f16_tile)
    }

    /// Of the plans' products of a step's few tokens (not a prompt's tiles), how many sum a row's
    /// parts by subgroup shuffles, and how many there are.
    pub fn products_summed_by_subgroups(&self) -> (usize, usize) {
        self.products_in(Products::Step, |k| k.subgroup_sum)
    }

    /// Each of the plans' attention shapes that a form is chosen for (a prompt's chunk, a deep decode
    /// step's split) and the form it runs in (tuned where tuned).
    pub fn attention_forms(&self) -> Vec<(AttentionShape, AttentionForm)> {
        let tuning = self.gpu.usable(self.gpu.tuning());
        (self.tunables().into_iter())
            .filter_map(|t| match t {
                Tunable::Attention(shape) => {
                    Some((shape, tuning.attention(&shape, self.gpu.adapter())))
                }
                Tunable::Matvec(_) | Tunable::Recurrence(_) => None,
            })
            .collect()
    }

    /// Of the plans' products of a kind, how many run in a kernel `which` picks, and how many there
    /// are.
    fn products_in(&self, kind: Products, which: impl Fn(&MatvecKernel) -> bool) -> (usize, usize) {
        let tuning = self.gpu.usable(self.gpu.tuning());
        let shapes: Vec<MatvecShape> = (self.tunables().iter())
            .filter(|s| s.is_matmul() == (kind == Products::Prompt))
            .filter_map(Tunable::matvec)
            .collect();
        let on = (shapes.iter()).filter(|s| which(&tuning.matvec(s, self.gpu.adapter())));
        (on.count(), shapes.len())
    }

    /// Of a decode step's products that may take 8-bit x (`MatvecShape::takes_q8`), those whose
    /// kernel (tuned where tuned) takes it, and all of them.
    pub fn products_on_int8_x(&self) -> (usize, usize) {
        let tuning = self.gpu.usable(self.gpu.tuning());
        let shapes: Vec<MatvecShape> = (self.tunables().iter())
            .filter_map(Tunable::matvec)
            .filter(|m| m.takes_q8())
            .collect();
        let on = shapes
            .iter()
            .filter(|s| tuning.matvec(s, self.gpu.adapter()).split == Split::PartsQ8);
        (on.count(), shapes.len())
    }

    /// The plans' tunable shapes (the decode step's, then those of a step of several sequences, then
    /// a prompt's chunk's), each once, in plan order.
    fn tunables(&self) -> Vec<Tunable> {
        let mut shapes: Vec<Tunable> = Vec::new();
        for plan in self.plans() {
            for shape in plan.dispatches.iter().filter_map(|d| d.tunable) {
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
            TuneShapes::All => self.tunables(),
            TuneShapes::New => self.untuned_shapes(),
        };
        shapes.sort_by_key(|s| std::cmp::Reverse(s.size()));
        let checking = Instant::now();
        let subgroup_size = match self.gpu.subgroup_size {
            Some(lanes)
                if !shapes.is_empty()
                    && crate::ops::matvec::subgroup_sums_work(&self.gpu).await? =>
            {
                Some(lanes)
            }
            _ => None,
        };
        let matmuls = shapes.iter().any(|s| s.is_matmul());
        let matrix_cores = match self.gpu.matrix_cores() {
            Some(cores) if matmuls => {
                let works = crate::ops::matvec::matrix_cores_work(&self.gpu).await?
                    && crate::ops::attention_check::matrix_attention_works(&self.gpu).await?
                    && crate::ops::attention_check::matrix_latent_attention_works(&self.gpu)
                        .await?;
                if !works {
                    self.gpu.forget_matrix_cores();
                }
                works.then_some(cores)
            }
            _ => None,
        };
        let offers = Offers {
            subgroup_size,
            matrix_cores,
            ..self.gpu.offers()
        };
        let matvecs = (shapes.iter()).any(|s| matches!(s, Tunable::Matvec(_)) && !s.is_matmul());
        let finals = match self.gpu.times_dispatches() && matvecs {
            true => FINAL_ROUNDS,
            false => 0,
        };
        Ok(Tuner {
            offers,
            every_candidate: false,
            shapes: shapes.len(),
            candidates: finals
                + (shapes.iter())
                    .map(|s| self.candidates(s, offers).len())
                    .sum::<usize>(),
            timed: 0,
            spent: TuneTimes {
                checks: checking.elapsed(),
                ..TuneTimes::default()
            },
            waiting: shapes.into(),
            current: None,
            done: Vec::new(),
            finals: Vec::new(),
            rounds: 0,
        })
    }

    /// Times the tuner's next candidate; where that was its shape's last, the shape's winner goes to
    /// the GPU (for plans made from now on) and to this engine's plans. Returns whether candidates
    /// are left. The activations are overwritten on the way; of the KV cache, only the next row, which
    /// the next step writes again.
    pub async fn tune_step(&mut self, tuner: &mut Tuner) -> Result<bool, Error> {
        if tuner.current.is_none() {
            let Some(shape) = tuner.waiting.pop_front() else {
                if !tuner.finals.is_empty() {
                    let start = Instant::now();
                    self.final_round(tuner).await?;
                    tuner.spent.in_plans += start.elapsed();
                }
                return Ok(!tuner.finished());
            };
            let candidates = self.candidates(&shape, tuner.offers);
            let (mut left, held) = match tuner.every_candidate {
                true => (candidates, Vec::new()),
                false => first_round(candidates),
            };
            left.reverse();
            tuner.current = Some(Timing {
                shape,
                left,
                held,
                built: false,
                times: Vec::new(),
                refused: Vec::new(),
            });
        }
        let timing = tuner.current.as_mut().expect("a shape being timed");
        // Where several threads build kernels, a round's candidates are built at once: on a GPU,
        // building a kernel costs more than timing it. (In the browser each is built as it is
        // timed: the worker answers requests between tuning steps, which stay short.)
        if !timing.built && self.gpu.building_threads() > 1 {
            let start = Instant::now();
            let (plan, _) = self.plan_holding(timing.shape);
            let keys: Vec<_> = (timing.left.iter())
                .map(|&c| plan.key_of(&timing.shape, c))
                .collect();
            self.gpu.build_pipelines(&keys).await;
            tuner.spent.building += start.elapsed();
        }
        timing.built = true;
        let candidate = timing.left.pop().expect("a shape with candidates left");
        let (plan, at) = self.plan_holding(timing.shape);
        let d = &plan.dispatches[at];
        // A product is timed over the tokens its shape names (a step's pair product of several
        // tokens: the four a layer of workgroups takes), its workgroups counted for them: counted
        // for a longer plan's batch, a kernel of four tokens a layer ran a layer of workgroups that
        // found no token, at nearly a full layer's cost where workgroups run on a CPU, and lost to
        // the tiles for it.
        let tokens = match timing.shape {
            Tunable::Matvec(m) => m.timed_tokens().min(plan.batch),
            Tunable::Recurrence(_) | Tunable::Attention(_) => plan.batch,
        };
        // A candidate the device will not build (its limits as reported let it through, and the
        // driver said no) is left out of the shape's race, not the end of the tuning: the plans'
        // own kernels were built when they were made. (One built at once above and refused is
        // built again here, to find why.)
        let key = plan.key_of(&timing.shape, candidate);
        let start = Instant::now();
        let refused = self.gpu.build_pipelines(&[key]).await.pop();
        tuner.spent.building += start.elapsed();
        let start = Instant::now();
        let built = match refused {
            Some((_, why)) => Err(why),
            None => {
                (self.gpu)
                    .checked("binding a candidate kernel", || {
                        plan.reshaped(&self.gpu, d, (candidate, tokens))
                    })
                    .await
            }
        };
        let (pipeline, bind_group, workgroups) = match built {
            Ok(built) => built,
            Err(refused @ GpuError::Validation(_)) => {
                timing.refused.push((candidate, refused.to_string()));
                tuner.timed += 1;
                self.end_of_candidate(tuner);
                return Ok(!tuner.finished());
            }
            Err(e) => return Err(e.into()),
        };
        match timing.shape {
            Tunable::Matvec(_) => self.write_scratch_step(tokens),
            // A step's split is timed deep into a context, where it runs: at the conversation's
            // own position it would time a few keys. It reads the cache's rows as they are and
            // writes only its own scratch.
            Tunable::Attention(a) if a.splits.is_some() => {
                self.write_scratch_step_at(a.tokens, crate::gpu::SPLIT_TIMED_AT)
            }
            // A chunk's attention, where the chunk lands on a GPU: deep into a long prompt (see
            // `chunk_timed_at`).
            Tunable::Attention(_) => match chunk_timed_at(self.gpu.runs_on_cpu()) {
                Some(pos) => self.write_scratch_step_at(plan.batch, pos),
                None => self.write_scratch_step(plan.batch),
            },
            Tunable::Recurrence(_) => self.write_scratch_step(plan.batch),
        }
        // The experts' products over a chunk read the lists the chunk's routes made: the plan runs
        // up to the product first, over the scratch step's tokens. Timed on what the lists hold at
        // load (every one empty), each candidate would time workgroups that leave at once.
        let over_experts =
            matches!(timing.shape, Tunable::Matvec(m) if m.kernel == Kernel::MatmulId);
        // A recurrence's runs, and the plan's run up to the experts, rewrite the layers' states,
        // which the sequence goes on from.
        let rewrites_states = over_experts || matches!(timing.shape, Tunable::Recurrence(_));
        let held = match rewrites_states {
            true => self.hold_states().await?,
            false => Vec::new(),
        };
        if over_experts {
            let mut enc = self.gpu.device.create_command_encoder(&Default::default());
            plan.record_until(
                &mut enc.begin_compute_pass(&Default::default()),
                plan.batch,
                at,
            );
            self.gpu.queue.submit([enc.finish()]);
        }
        // A candidate whose first dispatch takes twice the best mean so far has lost: its time is
        // not worth refining (the candidates of a 32-weight type that do on lavapipe cost 5 s a model).
        let best = timing.times.iter().map(|&(_, t)| t).min();
        let enough = best.map_or(Duration::MAX, |t| t * 2);
        let time = time_dispatch(
            &self.gpu,
            &pipeline,
            &bind_group,
            workgroups,
            (TUNE_BATCH, enough),
        );
        let time = time.await?;
        self.restore_states(&held);
        tuner.spent.alone += start.elapsed();
        timing.times.push((candidate, time));
        tuner.timed += 1;
        self.end_of_candidate(tuner);
        Ok(!tuner.finished())
    }

    /// The plan that holds a tunable shape first, and the place of its first dispatch there.
    fn plan_holding(&self, shape: Tunable) -> (&Plan, usize) {
        (self.plans())
            .find_map(|plan| {
                let at = (plan.dispatches.iter()).position(|d| d.tunable == Some(shape));
                at.map(|at| (plan, at))
            })
            .expect("a shape of a plan")
    }

    /// Where the shape being timed has no candidate left in its first round, its second round
    /// starts; where it has none left at all, its winner goes in.
    fn end_of_candidate(&mut self, tuner: &mut Tuner) {
        let timing = tuner.current.as_mut().expect("a shape being timed");
        if timing.left.is_empty() && !timing.held.is_empty() {
            let held = std::mem::take(&mut timing.held);
            let mut second = second_round(&timing.times, &held);
            tuner.candidates -= held.len() - second.len();
            second.reverse();
            timing.left = second;
            timing.built = false;
        }
        if timing.left.is_empty() {
            let timing = tuner.current.take().expect("a shape being timed");
            // A matmul's plan is a prompt's chunk: timing it whole, four times over, costs more
            // than a CPU-backed adapter's tuning should (seconds a round for a 1.5B model).
            // A recurrence or an attention runs once a layer, in a prompt's chunk only: its time
            // alone is its time.
            if let Tunable::Matvec(shape) = timing.shape {
                if self.gpu.times_dispatches() && !timing.shape.is_matmul() {
                    let had = self.gpu.tuning().matvec(&shape, self.gpu.adapter());
                    tuner.finals.push(finalists(shape, &timing.times, had));
                }
            }
            tuner.done.push(self.keep_winner(timing));
        }
    }

    /// Times each shape's next finalist in a whole run of the first plan that holds it (as
    /// `tune_step` times its candidates); after the last round, each shape's fastest there goes to
    /// the GPU and the plans.
    async fn final_round(&mut self, tuner: &mut Tuner) -> Result<(), Error> {
        let k = tuner.rounds;
        let held = self.hold_states().await?;
        let mut placed = vec![false; tuner.finals.len()];
        for plan in self.plans() {
            let mut swaps: Vec<Option<Swap>> = Vec::new();
            let mut timed: Vec<(usize, usize)> = Vec::new(); // (dispatch, final)
                                                             // The finals this plan runs: those an earlier plan did not.
            let here: Vec<bool> = (tuner.finals.iter().zip(&placed))
                .map(|(f, &done)| {
                    !done && plan.dispatches.iter().any(|d| d.matvec() == Some(f.shape))
                })
                .collect();
            for (i, d) in plan.dispatches.iter().enumerate() {
                let f = (tuner.finals.iter().enumerate())
                    .position(|(f, fin)| here[f] && d.matvec() == Some(fin.shape));
                let kernel = f.and_then(|f| tuner.finals[f].kernels.get(k));
                let swap = |&k| plan.reshaped(&self.gpu, d, (Choice::Matvec(k), plan.batch));
                swaps.push(kernel.map(swap));
                if let (Some(f), Some(_)) = (f, kernel) {
                    timed.push((i, f));
                }
            }
            for (p, h) in placed.iter_mut().zip(&here) {
                *p |= h;
            }
            if timed.is_empty() {
                continue;
            }
            self.write_scratch_step(plan.batch);
            let Some(times) = dispatch_times(&self.gpu, plan, &swaps).await? else {
                continue;
            };
            for (f, fin) in tuner.finals.iter_mut().enumerate() {
                let mine: Vec<Duration> = (timed.iter())
                    .filter(|&&(_, of)| of == f)
                    .map(|&(i, _)| times[i])
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                fin.times[k] = Some(mine.iter().sum::<Duration>() / mine.len() as u32);
            }
        }
        self.restore_states(&held);
        tuner.rounds += 1;
        tuner.timed += 1;
        if tuner.rounds == FINAL_ROUNDS {
            for fin in std::mem::take(&mut tuner.finals) {
                self.keep_final(fin, &mut tuner.done);
            }
        }
        Ok(())
    }

    /// Makes a shape's fastest finalist in the plan the one the GPU and the plans use, and says so
    /// in its report: its time and that of the kernel shape it had, as the plan ran them.
    fn keep_final(&mut self, fin: Final, done: &mut [Tuned]) {
        let timed = (fin.kernels.iter().zip(&fin.times)).filter_map(|(&k, t)| Some((k, (*t)?)));
        let Some((best, best_time)) = timed.min_by_key(|&(_, t)| t) else {
            return; // no plan timed it
        };
        let had = *fin.kernels.last().expect("the kernel shape it had");
        let had_time = fin.times.last().copied().flatten().unwrap_or(best_time);
        let mut tuning: Tuning = (*self.gpu.tuning()).clone();
        tuning.matvec.insert(fin.shape.key(), best);
        self.gpu.set_tuning(tuning.clone());
        self.retune_plans(&tuning);
        if let Some(t) = done
            .iter_mut()
            .find(|t| t.shape == Tunable::Matvec(fin.shape))
        {
            t.before = (Choice::Matvec(had), had_time);
            t.after = (Choice::Matvec(best), best_time);
            t.in_plan = (fin.kernels.iter().zip(&fin.times))
                .filter_map(|(&k, t)| Some((Choice::Matvec(k), (*t)?)))
                .collect();
        }
    }

    /// Makes a timed shape's fastest candidate the one the GPU and this engine's plans use.
    /// Where the device refused every candidate, the kernel the plans built keeps the shape (timed
    /// at nothing: it was not raced).
    fn keep_winner(&mut self, timing: Timing) -> Tuned {
        let Timing {
            shape,
            times,
            refused,
            ..
        } = timing;
        let mut tuning: Tuning = (*self.gpu.tuning()).clone();
        let current = tuning.choice(&shape, self.gpu.adapter());
        let fastest = times.iter().min_by_key(|(_, t)| *t);
        let (best, best_time) = *fastest.unwrap_or(&(current, Duration::ZERO));
        let before = times.iter().find(|(c, _)| *c == current).map(|&(_, t)| t);
        tuning.insert(&shape, best);
        self.gpu.set_tuning(tuning.clone());
        self.retune_plans(&tuning);
        Tuned {
            shape,
            before: (current, before.unwrap_or(best_time)),
            after: (best, best_time),
            alone: times,
            in_plan: Vec::new(),
            refused,
        }
    }

    /// A shape's candidates that this adapter can run.
    fn candidates(&self, shape: &Tunable, offers: Offers) -> Vec<Choice> {
        match shape {
            Tunable::Matvec(m) => {
                let mut c = m.candidates(offers);
                c.retain(|k| m.fits(k, &self.gpu.limits));
                c.into_iter().map(Choice::Matvec).collect()
            }
            Tunable::Recurrence(r) => {
                let workgroup_bytes = self.gpu.limits.max_compute_workgroup_storage_size;
                let forms = r.candidates(workgroup_bytes).into_iter();
                forms.map(Choice::Recurrence).collect()
            }
            Tunable::Attention(a) => {
                let forms = a.candidates(offers, self.gpu.adapter()).into_iter();
                forms.map(Choice::Attention).collect()
            }
        }
    }

    /// Times `which` shapes of the plans on this adapter at every candidate kernel, and gives the winners to the GPU and to this engine's plans. Returns the GPU's tuning
    /// with them, and each timed shape's time before and after.
    pub async fn tune(&mut self, which: TuneShapes) -> Result<(Tuning, Vec<Tuned>), Error> {
        let mut tuner = self.tuner(which).await?;
        while self.tune_step(&mut tuner).await? {}
        Ok(((*self.gpu.tuning()).clone(), tuner.done))
    }
}

/// A timed matvec shape's finalists: its fastest candidates alone, then the kernel shape it had
/// (last, whether or not among them).
fn finalists(shape: MatvecShape, times: &[(Choice, Duration)], had: MatvecKernel) -> Final {
    let mut by_time: Vec<(MatvecKernel, Duration)> = (times.iter())
        .filter_map(|&(c, t)| match c {
            Choice::Matvec(k) => Some((k, t)),
            Choice::Recurrence(_) | Choice::Attention(_) => None,
        })
        .collect();
    by_time.sort_by_key(|&(_, t)| t);
    let mut kernels: Vec<MatvecKernel> = (by_time.iter())
        .map(|&(k, _)| k)
        .filter(|&k| k != had)
        .take(FINALISTS)
        .collect();
    kernels.push(had);
    Final {
        shape,
        times: vec![None; kernels.len()],
        kernels,
    }
}

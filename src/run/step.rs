//! One step as the algorithm: each half step walks its list of passes
//! ([`crate::backend::pass`]), then exchanges its halos; each pass is timed.

use crate::backend::pass::ALL_PASSES;
use crate::backend::{Backend, Half, Pass, StepMode};
use crate::decomp::{HaloPlan, SlabRange};
use crate::model::Model;
use std::time::{Duration, Instant};

/// Wall time spent in each phase of the loop. On a GPU the passes and exchanges are queued,
/// not waited for, so their times are those of issuing the launches; the device's time shows
/// where the host waits for it (monitors, checks).
#[derive(Debug, Clone, Copy, Default)]
pub struct PhaseTimes {
    /// Per half step ([`Half::index`]) and pass ([`Pass::index`]): the pass over every slab.
    pub passes: [[Duration; ALL_PASSES.len()]; 2],
    /// Fused sweeps ([`StepMode::Fused`]): both half steps' passes and halo copies together.
    pub fused: Duration,
    /// Halo exchanges.
    pub exchange: Duration,
    /// Probes, snapshots and file writes.
    pub monitors: Duration,
    /// NaN/Inf checks.
    pub checks: Duration,
    /// Writing checkpoints (draining the monitors, flushing the result, reading the state
    /// and writing the checkpoint file).
    pub checkpoint: Duration,
}

impl PhaseTimes {
    /// Time of half step `half`'s passes (halo exchanges not included).
    pub fn half(&self, half: Half) -> Duration {
        self.passes[half.index()].iter().sum()
    }

    /// Time of each pass in step order: (half, pass, time).
    pub fn each_pass(&self) -> impl Iterator<Item = (Half, Pass, Duration)> + '_ {
        Half::BOTH.into_iter().flat_map(move |h| {
            h.passes()
                .iter()
                .map(move |&p| (h, p, self.passes[h.index()][p.index()]))
        })
    }
}

/// Steps a backend through the algorithm without any output: what the time loop, the tests
/// and the benchmarks share.
pub struct Stepper<'a, B: Backend> {
    model: &'a Model,
    /// The engine being stepped.
    pub backend: &'a mut B,
    /// The halo copies replayed each half step.
    pub halos: HaloPlan,
    currents: Vec<f64>,
    magnetic: Vec<f64>,
    steps_done: usize,
    mode: StepMode,
}

impl<'a, B: Backend> Stepper<'a, B> {
    /// Prepare to step `backend`, which holds `model` split as `ranges`.
    pub fn new(model: &'a Model, backend: &'a mut B, ranges: &[SlabRange]) -> Self {
        let halos = HaloPlan::new(ranges, &model.boundaries);
        Stepper {
            model,
            backend,
            halos,
            currents: Vec::with_capacity(model.sources.len()),
            magnetic: Vec::with_capacity(model.sources.len() + 1),
            steps_done: 0,
            mode: StepMode::default(),
        }
    }

    /// Step in `mode` (the default is [`StepMode::default`]); an engine without a fused sweep
    /// ([`Backend::has_fused_step`]) steps two-pass whatever the mode.
    pub fn with_mode(mut self, mode: StepMode) -> Self {
        self.mode = mode;
        self
    }

    /// The mode the steps run in (the backend's fallback included).
    pub fn mode(&self) -> StepMode {
        if self.backend.has_fused_step() {
            self.mode
        } else {
            StepMode::TwoPass
        }
    }

    /// What the run line says about the update: the mode and why.
    pub fn mode_note(&self) -> String {
        match (self.mode, self.mode()) {
            (StepMode::Fused, StepMode::Fused) => {
                "update: fused H+E sweep (the default; --two-pass for the two-pass reference)"
                    .into()
            }
            (StepMode::Fused, StepMode::TwoPass) => format!(
                "update: two-pass (the {} engine has no fused sweep)",
                self.backend.name()
            ),
            _ => "update: two-pass (--two-pass)".into(),
        }
    }

    /// One full step: H with magnetic sources at n dt, H halos, E with sources at
    /// (n + 1/2) dt, E halos.
    pub fn step(&mut self) {
        self.step_timed(&mut PhaseTimes::default());
    }

    /// [`Stepper::step`], adding the wall time of each pass and of the halo exchanges to
    /// `phases`. Each half step walks its pass list ([`Half::passes`]), then exchanges its
    /// halos; the values of the sources are those of the half step's time.
    pub fn step_timed(&mut self, phases: &mut PhaseTimes) {
        let n = self.steps_done as f64;
        let dt = self.model.grid.dt;
        if self.mode() == StepMode::Fused {
            magnetic_source_values(self.model, n * dt, &mut self.magnetic);
            source_values(self.model, (n + 0.5) * dt, &mut self.currents);
            let t = Instant::now();
            self.backend
                .step_fused(&self.halos, &self.magnetic, &self.currents);
            phases.fused += t.elapsed();
            self.steps_done += 1;
            return;
        }
        for half in Half::BOTH {
            let (values, copies) = match half {
                Half::H => {
                    magnetic_source_values(self.model, n * dt, &mut self.magnetic);
                    (&self.magnetic, &self.halos.after_h)
                }
                Half::E => {
                    source_values(self.model, (n + 0.5) * dt, &mut self.currents);
                    (&self.currents, &self.halos.after_e)
                }
            };
            let mut t = Instant::now();
            self.backend.begin_half(half);
            for &pass in half.passes() {
                self.backend.run_pass(half, pass, values);
                let now = Instant::now();
                phases.passes[half.index()][pass.index()] += now - t;
                t = now;
            }
            self.backend.exchange(copies);
            phases.exchange += t.elapsed();
        }
        self.steps_done += 1;
    }

    /// Steps taken so far.
    pub fn steps_done(&self) -> usize {
        self.steps_done
    }

    /// Continue after `steps_done` steps (a run resumed from a checkpoint whose state the
    /// backend holds): the next step's sources are those of step `steps_done + 1`.
    pub fn resume_after(&mut self, steps_done: usize) {
        self.steps_done = steps_done;
    }
}

/// Source currents J at time t for every model source.
pub fn source_values(model: &Model, t: f64, out: &mut Vec<f64>) {
    out.clear();
    out.extend(model.sources.iter().map(|s| s.current(t)));
}

/// Magnetic currents M at time t for every model source (0 for those without a magnetic
/// sheet), followed, with a TF/SF source, by the drive of its 1-D grid at t (the H half step
/// advances the 1-D E to t = n dt).
pub fn magnetic_source_values(model: &Model, t: f64, out: &mut Vec<f64>) {
    out.clear();
    out.extend(model.sources.iter().map(|s| s.magnetic_current(t)));
    out.extend(model.tfsf.iter().map(|s| s.drive(t)));
}

/// The step mode a run of `slabs` slabs on `threads` threads uses for the `requested` one: the
/// fused sweep runs one thread per slab, so with fewer slabs than threads the two-pass update,
/// parallel within a slab, is the faster and is taken instead (the same bits either way).
pub fn mode_for_split(requested: StepMode, slabs: usize, threads: usize) -> StepMode {
    if requested == StepMode::Fused && slabs < threads {
        StepMode::TwoPass
    } else {
        requested
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewer_slabs_than_threads_step_two_pass() {
        assert_eq!(mode_for_split(StepMode::Fused, 1, 2), StepMode::TwoPass);
        assert_eq!(mode_for_split(StepMode::Fused, 2, 2), StepMode::Fused);
        assert_eq!(mode_for_split(StepMode::Fused, 4, 2), StepMode::Fused);
        assert_eq!(mode_for_split(StepMode::TwoPass, 4, 2), StepMode::TwoPass);
    }
}

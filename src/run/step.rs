//! One step as the algorithm: each half step walks its list of passes
//! ([`crate::backend::pass`]), then exchanges its halos; each pass is timed.

pub use crate::backend::PhaseTimes;
use crate::backend::{Backend, Half, StepMode};
use crate::decomp::{HaloPlan, SlabRange};
use crate::model::{Component, Model};
use std::time::Instant;

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
    /// Steps per sweep asked for ([`Stepper::with_steps_per_sweep`]).
    per_sweep: usize,
}

/// Steps the CPU's fused sweep takes at once by default (temporal blocking, `--steps-per-sweep`):
/// at 256^3 on 2 cores, 4 and 8 ran at the same rate, 16 slower (docs/performance.md). A
/// sweep holds about this many planes plus one of every array per slab in cache (13 MiB at
/// 256^2 cells in f32), and it runs only between the steps where monitors read the fields.
pub const DEFAULT_STEPS_PER_SWEEP: usize = 8;

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
            per_sweep: 1,
        }
    }

    /// Let [`Stepper::step_many`] take up to `steps` steps in one fused sweep (1: one step
    /// per sweep), where the engine can ([`Stepper::steps_per_sweep`]).
    pub fn with_steps_per_sweep(mut self, steps: usize) -> Self {
        self.per_sweep = steps.max(1);
        self
    }

    /// The steps [`Stepper::step_many`] takes at once at most: those asked for in the fused
    /// mode on an engine that sweeps several steps at once
    /// ([`Backend::can_step_fused_many`]), else 1.
    pub fn steps_per_sweep(&self) -> usize {
        if self.mode() == StepMode::Fused && self.backend.can_step_fused_many(&self.halos) {
            self.per_sweep
        } else {
            1
        }
    }

    /// True if a sweep of several steps may go past a flux DFT sample, the engine reading the
    /// sample's planes as the sweep passes them ([`Backend::reads_flux_in_sweep`]); the time
    /// loop then ends sweeps before a second sample (`steps_until_monitors`).
    pub fn flux_in_sweep(&self) -> bool {
        self.steps_per_sweep() > 1 && self.backend.reads_flux_in_sweep()
    }

    /// Step in `mode` (the default is [`StepMode::default`]); an engine without a fused sweep
    /// ([`Backend::has_fused_step`]) steps two-pass whatever the mode.
    pub fn with_mode(mut self, mode: StepMode) -> Self {
        self.mode = mode;
        self
    }

    /// Step in `mode` from now on (as [`Stepper::with_mode`], in place).
    pub fn set_mode(&mut self, mode: StepMode) {
        self.mode = mode;
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
            (StepMode::Fused, StepMode::Fused) if self.steps_per_sweep() > 1 => format!(
                "update: fused H+E sweep, up to {} steps per sweep between monitor reads (the default; --steps-per-sweep 1 for one, --two-pass for the two-pass reference)",
                self.steps_per_sweep()
            ),
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

    /// `count` whole steps, as [`Stepper::step_timed`] each, queueing after each a row of the
    /// probe samples `samples` ([`Backend::queue_probes`]; none if empty), but in sweeps of up
    /// to [`Stepper::steps_per_sweep`] steps (temporal blocking: the same bits, fewer passes
    /// over memory; the sweep reads the probes as it passes their planes). The probes' time
    /// is the monitors' where a step runs alone, the sweep's where it is read in a sweep.
    pub fn step_many(
        &mut self,
        count: usize,
        samples: &[(Component, [usize; 3])],
        phases: &mut PhaseTimes,
    ) {
        let per_sweep = self.steps_per_sweep();
        let dt = self.model.grid.dt;
        let mut done = 0;
        while done < count {
            let k = per_sweep.min(count - done);
            if k == 1 {
                // One step needs no wavefront: the rayon sweep, without a thread per slab.
                self.step_timed(phases);
                done += 1;
                if !samples.is_empty() {
                    let t = Instant::now();
                    self.backend.queue_probes(samples);
                    phases.monitors += t.elapsed();
                }
                continue;
            }
            let values: Vec<(Vec<f64>, Vec<f64>)> = (0..k)
                .map(|i| {
                    let n = (self.steps_done + i) as f64;
                    let (mut m, mut j) = (Vec::new(), Vec::new());
                    magnetic_source_values(self.model, n * dt, &mut m);
                    source_values(self.model, (n + 0.5) * dt, &mut j);
                    (m, j)
                })
                .collect();
            let steps: Vec<(&[f64], &[f64])> = values
                .iter()
                .map(|(m, j)| (m.as_slice(), j.as_slice()))
                .collect();
            let t = Instant::now();
            self.backend
                .step_fused_many(&self.halos, &steps, self.steps_done + 1, samples);
            phases.fused += t.elapsed();
            self.steps_done += k;
            done += k;
        }
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

/// The steps to take from `done` steps before the monitors of `model` must see the fields,
/// at most `per_sweep`: up to the next step that a snapshot or a NaN check (every
/// `check_every` steps) falls on, or the last step; and up to the next flux or far-field DFT
/// sample, or, where the engine reads the sample's planes within the sweep (`flux_in_sweep`,
/// [`Stepper::flux_in_sweep`]), up to the step before the sample after it. Probes do not end
/// a sweep: [`Stepper::step_many`] reads them as it passes.
pub fn steps_until_monitors(
    model: &Model,
    done: usize,
    check_every: usize,
    per_sweep: usize,
    flux_in_sweep: bool,
) -> usize {
    if per_sweep <= 1 {
        return 1;
    }
    // The first step after `after` that is a multiple of `every`.
    let next = |after: usize, every: usize| (after / every.max(1) + 1) * every.max(1);
    let sample_after = |after: usize| model.fluxes.iter().map(|f| next(after, f.decimation)).min();
    let flux = sample_after(done).map(|first| {
        if flux_in_sweep {
            // One sample within the sweep: the engine holds the planes of one step.
            sample_after(first).map_or(first, |second| second - 1)
        } else {
            first
        }
    });
    let due = model
        .snapshots
        .iter()
        .map(|s| next(done, s.every))
        .chain(flux)
        .chain([next(done, check_every), model.grid.steps.max(done + 1)])
        .min()
        .unwrap_or(done + 1);
    (due - done).clamp(1, per_sweep)
}

/// The steps per sweep a run of `slabs` slabs on `threads` threads uses for the `requested`
/// number: each slab sweeps on a thread of its own while several steps are swept at once, so
/// with more slabs than threads one step per sweep.
pub fn steps_per_sweep_for(requested: usize, slabs: usize, threads: usize) -> usize {
    if slabs > threads {
        1
    } else {
        requested.max(1)
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

    #[test]
    fn more_slabs_than_threads_sweep_one_step_at_a_time() {
        assert_eq!(steps_per_sweep_for(8, 3, 2), 1);
        assert_eq!(steps_per_sweep_for(8, 2, 2), 8);
        assert_eq!(steps_per_sweep_for(8, 1, 4), 8);
        assert_eq!(steps_per_sweep_for(0, 1, 1), 1);
    }

    /// A 20-step scene with `monitors` (TOML) added.
    fn scene(monitors: &str) -> Model {
        let text = format!(
            "[simulation]\nname = \"m\"\nlength_unit = \"mm\"\ncell_size = 1.0\n\
             size = [8.0, 8.0, 8.0]\nsteps = 20\n\n[boundaries]\ndefault = {{ type = \"pec\" }}\n\n[[source]]\ntype = \"dipole\"\n\
             component = \"Ez\"\nposition = [0.0, 0.0, 0.0]\n\
             waveform = {{ type = \"gaussian\", frequency = 3.0e10, bandwidth = 2.0e10 }}\n{monitors}"
        );
        crate::scene::load_str(&text, "m.toml")
            .expect("the scene")
            .0
    }

    #[test]
    fn sweeps_end_on_every_step_a_monitor_or_check_reads() {
        let bare = scene("");
        // Up to the sweep's length, the next NaN check (every 7 here) or the last step.
        assert_eq!(steps_until_monitors(&bare, 0, 7, 4, false), 4);
        assert_eq!(steps_until_monitors(&bare, 4, 7, 4, false), 3);
        assert_eq!(steps_until_monitors(&bare, 7, 100, 8, false), 8);
        assert_eq!(steps_until_monitors(&bare, 15, 100, 8, false), 5);
        assert_eq!(steps_until_monitors(&bare, 0, 100, 1, false), 1);
        let snap = scene(
            "[[monitor]]\ntype = \"snapshot\"\nname = \"s\"\ncomponents = [\"Ez\"]\n\
             plane = { z = 0.0 }\nevery = 5\n",
        );
        assert_eq!(steps_until_monitors(&snap, 0, 100, 8, false), 5);
        assert_eq!(steps_until_monitors(&snap, 5, 100, 8, false), 5);
        assert_eq!(steps_until_monitors(&snap, 6, 100, 8, false), 4);
        assert_eq!(steps_until_monitors(&snap, 6, 2, 8, false), 2);
        let mut flux = scene(
            "[[monitor]]\ntype = \"flux\"\nname = \"f\"\nplane = { x = 1.0 }\n\
             frequencies = { min = 1.0e10, max = 5.0e10, count = 3 }\n",
        );
        flux.fluxes[0].decimation = 3;
        assert_eq!(steps_until_monitors(&flux, 0, 100, 8, false), 3);
        assert_eq!(steps_until_monitors(&flux, 4, 100, 8, false), 2);
        // Read within the sweep: past one sample, up to the step before the next.
        assert_eq!(steps_until_monitors(&flux, 0, 100, 8, true), 5);
        assert_eq!(steps_until_monitors(&flux, 4, 100, 8, true), 4);
        assert_eq!(steps_until_monitors(&flux, 0, 100, 4, true), 4);
        // Two monitors: the samples of both count, and a step both sample is one sample.
        let mut two = flux.clone();
        two.fluxes.push(two.fluxes[0].clone());
        two.fluxes[1].decimation = 4;
        assert_eq!(steps_until_monitors(&two, 0, 100, 8, true), 3);
        assert_eq!(steps_until_monitors(&two, 3, 100, 8, true), 2);
        assert_eq!(steps_until_monitors(&two, 9, 100, 8, true), 5);
        two.fluxes[1].decimation = 6;
        assert_eq!(steps_until_monitors(&two, 3, 100, 8, true), 5);
        // Every step sampled: one step per sweep, read or not.
        flux.fluxes[0].decimation = 1;
        assert_eq!(steps_until_monitors(&flux, 4, 100, 8, true), 1);
        // The last step still ends the run's last sweep.
        flux.fluxes[0].decimation = 7;
        assert_eq!(steps_until_monitors(&flux, 14, 100, 8, true), 6);
        // Probes are read within the sweep.
        let probe = scene(
            "[[monitor]]\ntype = \"probe\"\nname = \"p\"\nposition = [1.0, 0.0, 0.0]\n\
             components = [\"Ez\"]\n",
        );
        assert_eq!(steps_until_monitors(&probe, 0, 100, 8, false), 8);
        assert_eq!(steps_until_monitors(&probe, 16, 100, 8, false), 4);
    }
}

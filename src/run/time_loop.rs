//! The time loop, shared by every backend: it reads as the algorithm.
//!
//! Per step: the H passes, the H halo exchange, the E passes (with the source currents), the E
//! halo exchange ([`super::Stepper`]), then the monitors; now and then a NaN/Inf check, a
//! progress report and a flush. Each pass and phase is timed. The caller creates the file and
//! hands the writer in ([`super::run_backend`]). The loop stops at the end of a step when the stop flag is set
//! (Ctrl-C), the fields blow up, the backend reports a device failure or a write fails (a full
//! disk), leaving a valid file with `complete = false` that holds everything written so far.
//!
//! Monitors are queued, not read: probe rows, snapshot regions and flux DFTs are recorded by
//! the backend (on a GPU, without waiting for it) and written when their data has reached the
//! host, so the device keeps computing while the HDF5 writer works. The CPU backend reads at
//! once, so there everything is written in the step it was taken. The file is the same either
//! way: the same probe series, snapshot rows and flux spectra.

use super::monitors::{write_fluxes, Monitors};
use super::observer::progress_from;
use super::{Observer, PhaseTimes, RunError, RunInfo, RunOptions, Stepper, Summary};
use crate::backend::Backend;
use crate::decomp::SlabRange;
use crate::model::{Model, Precision};
use crate::output::{Hdf5Writer, OutputError};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The shared time loop over any backend, writing into `writer` (created by the caller for
/// `opts.output`, in the backend's precision). It finishes the file (`complete` says whether
/// every step ran) and closes it; reopening a file a failed write left unreadable and the XDMF
/// sidecar are the caller's ([`super::run_backend`]).
pub fn time_loop<B: Backend>(
    model: &Model,
    backend: &mut B,
    writer: Hdf5Writer,
    ranges: &[SlabRange],
    threads: usize,
    opts: &RunOptions,
    obs: &mut dyn Observer,
) -> Result<Summary, RunError> {
    time_loop_from(model, backend, writer, ranges, threads, opts, obs, 0)
}

/// [`time_loop`] continuing after `start` steps: the backend holds the state after them and
/// `writer` the file as it was then (a run resumed from a checkpoint; 0 for a new run).
///
/// Checkpoints ([`crate::checkpoint`]): every `opts.checkpoint_every` of wall time, and when
/// the stop flag ends the run (with `checkpoint_every`, or when `opts.checkpoint_on_stop`
/// says so), the loop drains the monitors, flushes the file, reads the backend's state and
/// writes the checkpoint. A run that completes removes its checkpoint: nothing is left to
/// resume. A checkpoint that cannot be written stops the run like any failed write.
#[allow(clippy::too_many_arguments)]
pub(super) fn time_loop_from<B: Backend>(
    model: &Model,
    backend: &mut B,
    writer: Hdf5Writer,
    ranges: &[SlabRange],
    threads: usize,
    opts: &RunOptions,
    obs: &mut dyn Observer,
    start: usize,
) -> Result<Summary, RunError> {
    obs.start(&run_info(model, backend, ranges, threads));
    let mut run = Loop::new(model, opts, writer, start);
    let mut stepper = stepper(model, backend, ranges, threads, opts, obs);
    stepper.resume_after(start);
    let failure = run.steps(&mut stepper, obs);
    run.finish(stepper.backend, failure, obs)
}

/// What the run tells its observer at the start.
fn run_info<B: Backend>(
    model: &Model,
    backend: &B,
    ranges: &[SlabRange],
    threads: usize,
) -> RunInfo {
    let g = &model.grid;
    RunInfo {
        backend: backend.name(),
        cells: g.cells(),
        steps: g.steps,
        slabs: ranges.to_vec(),
        threads,
        courant: g.dt / crate::model::Grid::courant_limit_of(g.min_cell(), model.flat_axes()),
        dims: 3 - model.flat_axes().iter().filter(|&&f| f).count(),
        allocation: {
            // The backend's slabs plus the host monitor buffers (on the CPU the snapshot gather
            // buffer and the flux DFTs; on CUDA a snapshot region's host copy): what the plan
            // lists.
            let mut a = backend.allocation();
            a.monitors += backend.host_monitor_bytes(model);
            a
        },
    }
}

/// The stepper of the run: the fused sweep runs one thread per slab, so with fewer slabs than
/// threads the two-pass update, parallel within a slab, is the faster one, and the run says
/// so; several steps per sweep need a thread per slab, and the run line says how many it takes.
fn stepper<'b, B: Backend>(
    model: &'b Model,
    backend: &'b mut B,
    ranges: &[SlabRange],
    threads: usize,
    opts: &RunOptions,
    obs: &mut dyn Observer,
) -> Stepper<'b, B> {
    let mode = if backend.fused_sweep_is_per_slab() {
        super::step::mode_for_split(opts.step, ranges.len(), threads)
    } else {
        opts.step
    };
    let fewer_slabs = mode != opts.step;
    let per_sweep = super::step::steps_per_sweep_for(opts.steps_per_sweep, ranges.len(), threads);
    let stepper = Stepper::new(model, backend, ranges)
        .with_mode(mode)
        .with_steps_per_sweep(per_sweep);
    if fewer_slabs && stepper.backend.has_fused_step() {
        obs.message(&format!(
            "update: two-pass ({} slab{} for {threads} threads: the fused sweep runs one thread per slab; give --slabs {threads} for it)",
            ranges.len(),
            if ranges.len() == 1 { "" } else { "s" }
        ));
    } else {
        obs.message(&stepper.mode_note());
    }
    stepper
}

/// What the time loop keeps between steps: the file, the monitors, the clocks of the reports,
/// flushes and checkpoints, and how far the run got.
struct Loop<'a> {
    model: &'a Model,
    opts: &'a RunOptions,
    writer: Hdf5Writer,
    monitors: Monitors,
    phases: PhaseTimes,
    /// The step the run started after (a resumed run's checkpoint; 0 for a new run).
    start: usize,
    started: Instant,
    last_report: Instant,
    last_flush: Instant,
    last_checkpoint: Instant,
    checkpoints: usize,
    /// Steps whose fields are written (or were, when the run started after them).
    steps_done: usize,
    checkpoint_path: std::path::PathBuf,
    size_limit: Option<SizeLimit>,
}

impl<'a> Loop<'a> {
    fn new(model: &'a Model, opts: &'a RunOptions, writer: Hdf5Writer, start: usize) -> Self {
        let mut monitors = Monitors::new(model);
        monitors.resume_after(start);
        let started = Instant::now();
        Loop {
            model,
            opts,
            writer,
            monitors,
            phases: PhaseTimes::default(),
            start,
            started,
            last_report: started,
            last_flush: started,
            last_checkpoint: started,
            checkpoints: 0,
            steps_done: start,
            checkpoint_path: opts.checkpoint_path(),
            size_limit: SizeLimit::new(model, model.precision),
        }
    }

    /// Step to the end, or until the stop flag or a failure: the failure, if any. Per sweep:
    /// the steps up to the next one whose fields a monitor or check reads, in one sweep where
    /// the engine can (the steps between are seen by nothing but the next step); then the
    /// monitors, the checks, a progress report, the stop flag, a checkpoint when due.
    fn steps<B: Backend>(
        &mut self,
        stepper: &mut Stepper<'_, B>,
        obs: &mut dyn Observer,
    ) -> Option<Failure> {
        let steps = self.model.grid.steps;
        let per_sweep = stepper.steps_per_sweep();
        let flux_in_sweep = stepper.flux_in_sweep();
        let mut n = self.start;
        while n < steps {
            // Monitors see E^{n+1} and H^{n+1/2}: the probes are queued after each step
            // (within a sweep as it passes them), a flux sample's planes within the sweep
            // where the engine reads them there, the rest now; all written when their data is
            // here.
            let k = super::step::steps_until_monitors(
                self.model,
                n,
                self.opts.check_every,
                per_sweep,
                flux_in_sweep,
            );
            stepper.step_many(k, &self.monitors.samples, &mut self.phases);
            n += k;
            let backend = &mut *stepper.backend;
            let now = Instant::now();
            if let Some(failure) = self.monitors_after(backend, n, now) {
                return Some(failure);
            }
            if let Some(failure) = self.checks_after(backend, n) {
                return Some(failure);
            }
            if now.duration_since(self.last_report) > Duration::from_millis(200) {
                self.last_report = now;
                obs.progress(&self.progress(n, self.started.elapsed()));
            }
            if self.opts.stop.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(failure) = self.checkpoint_when_due(backend, n) {
                return Some(failure);
            }
        }
        None
    }

    /// The monitors of `step` (snapshots queued and written, flux DFTs accumulated, probes
    /// and spectra written on the flushes, the size limit checked) and the device's health
    /// after them. A failed write (a full disk) ends the run like an interrupt, after this
    /// step.
    fn monitors_after<B: Backend>(
        &mut self,
        backend: &mut B,
        step: usize,
        now: Instant,
    ) -> Option<Failure> {
        let t = Instant::now();
        let written = self.write_monitors(backend, step, now);
        self.phases.monitors += t.elapsed();
        if let Err(e) = written {
            self.steps_done = step;
            return Some(Failure::Output(e));
        }
        if let Some(message) = backend.failure() {
            return Some(Failure::Device { step, message });
        }
        self.steps_done = step;
        None
    }

    /// [`Self::monitors_after`]'s writes.
    fn write_monitors<B: Backend>(
        &mut self,
        backend: &mut B,
        step: usize,
        now: Instant,
    ) -> Result<(), OutputError> {
        let model = self.model;
        if let Some(limit) = &self.size_limit {
            limit.check(model, step, &self.opts.output)?;
        }
        let writer = &mut self.writer;
        let mut wrote_snapshot = self.monitors.write_snapshots(writer, backend, false)?;
        for (s, snap) in model.snapshots.iter().enumerate() {
            if step % snap.every == 0 {
                wrote_snapshot |= self.monitors.queue_snapshot(writer, backend, s, step)?;
            }
        }
        if !model.fluxes.is_empty() {
            backend.accumulate_flux(step, model.grid.dt);
        }
        let timed_flush = now.duration_since(self.last_flush) > Duration::from_secs(10);
        if timed_flush {
            // Flux spectra are cheap to form but not free: refresh them on the timed flushes.
            write_fluxes(writer, backend, model, step, false)?;
        }
        if wrote_snapshot || timed_flush {
            self.monitors.write_probes(model, writer, backend, false);
            writer.flush::<B::Real>(step)?;
            self.last_flush = Instant::now();
        }
        Ok(())
    }

    /// The NaN/Inf check every `check_every` steps and at the last one.
    fn checks_after<B: Backend>(&mut self, backend: &mut B, step: usize) -> Option<Failure> {
        if step % self.opts.check_every != 0 && step != self.model.grid.steps {
            return None;
        }
        let c0 = Instant::now();
        let finite = backend.all_finite();
        self.phases.checks += c0.elapsed();
        if let Some(message) = backend.failure() {
            self.steps_done = step - 1;
            return Some(Failure::Device { step, message });
        }
        (!finite).then(|| {
            Failure::NonFinite(non_finite_message(self.model, step, self.opts.check_every))
        })
    }

    /// A checkpoint every `opts.checkpoint_every` of wall time, before the last step; never of
    /// a blown-up state, which must not replace the last good checkpoint.
    fn checkpoint_when_due<B: Backend>(&mut self, backend: &mut B, step: usize) -> Option<Failure> {
        let every = self.opts.checkpoint_every?;
        if self.last_checkpoint.elapsed() < every || step >= self.model.grid.steps {
            return None;
        }
        if !backend.all_finite() {
            return Some(Failure::NonFinite(non_finite_message(
                self.model,
                step,
                self.opts.check_every,
            )));
        }
        let written = self.checkpoint(backend, step);
        self.last_checkpoint = Instant::now();
        if let Err(e) = written {
            return Some(Failure::Output(e));
        }
        backend
            .failure()
            .map(|message| Failure::Device { step, message })
    }

    /// Write the checkpoint after `step` steps, timed; counted when written.
    fn checkpoint<B: Backend>(
        &mut self,
        backend: &mut B,
        step: usize,
    ) -> Result<bool, OutputError> {
        let c0 = Instant::now();
        let r = checkpoint(
            self.model,
            backend,
            &mut self.writer,
            &mut self.monitors,
            step,
            &self.checkpoint_path,
        );
        self.phases.checkpoint += c0.elapsed();
        if let Ok(true) = r {
            self.checkpoints += 1;
        }
        r
    }

    /// The progress after `step` steps, `wall` into the run.
    fn progress(&self, step: usize, wall: Duration) -> super::Progress {
        let g = &self.model.grid;
        progress_from(g.cells(), self.start, step, g.steps, g.dt, wall)
    }

    /// End the run after `failure` (None: it completed or was stopped): write whatever is
    /// still queued (after a device failure, what reached the host), finish the file, leave a
    /// checkpoint when a stop ended the run, remove it when the run completed, and report.
    fn finish<B: Backend>(
        mut self,
        backend: &mut B,
        mut failure: Option<Failure>,
        obs: &mut dyn Observer,
    ) -> Result<Summary, RunError> {
        let model = self.model;
        let g = &model.grid;
        let steps_done = self.steps_done;
        // After a failed write, still try to close the file cleanly: the first error is the
        // one reported.
        let t6 = Instant::now();
        let tail = (|| -> Result<(), OutputError> {
            self.monitors
                .write_snapshots(&mut self.writer, backend, true)?;
            self.monitors
                .write_probes(model, &mut self.writer, backend, true);
            self.writer.write_terminal_spectra::<B::Real>(model)?;
            write_fluxes(&mut self.writer, backend, model, steps_done, true)
        })();
        self.phases.monitors += t6.elapsed();
        let complete = steps_done == g.steps && failure.is_none() && tail.is_ok();
        let finished = self.writer.finish::<B::Real>(steps_done, complete);
        let complete = complete && finished.is_ok();
        if failure.is_none() {
            if let Err(e) = tail.and(finished) {
                failure = Some(Failure::Output(e));
            }
        }
        let left_checkpoint = self.checkpoint_on_stop(backend, complete, &mut failure);
        if complete {
            // Nothing is left to resume; a checkpoint here would only be a stale copy of the
            // run.
            let _ = std::fs::remove_file(&self.checkpoint_path);
        }
        let wall = self.started.elapsed();
        let summary = Summary {
            backend: backend.name(),
            cells: g.cells(),
            steps_done,
            steps: g.steps,
            wall,
            mcells_per_s: self.progress(steps_done, wall).mcells_per_s,
            phases: self.phases,
            device: backend.device_times(),
            output: self.opts.output.clone(),
            complete,
            sidecar_warning: None,
            first_step: self.start,
            checkpoints: self.checkpoints,
            checkpoint: left_checkpoint,
        };
        drop(self.writer);
        obs.progress(&progress_from(
            g.cells(),
            self.start,
            steps_done,
            g.steps,
            g.dt,
            wall,
        ));
        if summary.checkpoints > 0 {
            obs.message(&format!(
                "checkpoints: {} written in {:.2} s ({:.0}% of the run){}",
                summary.checkpoints,
                summary.phases.checkpoint.as_secs_f64(),
                100.0 * summary.phases.checkpoint.as_secs_f64() / wall.as_secs_f64().max(1e-9),
                summary
                    .checkpoint
                    .as_ref()
                    .map_or(String::new(), |p| format!(
                        "; resume with `yee resume {}` ({})",
                        self.opts.output.display(),
                        p.display()
                    ))
            ));
        }
        obs.finish(&summary);
        match failure {
            Some(Failure::NonFinite(message)) => Err(RunError::NonFinite {
                message,
                summary: Box::new(summary),
            }),
            Some(Failure::Device { step, message }) => Err(RunError::Device {
                step,
                message,
                summary: Box::new(summary),
            }),
            Some(Failure::Output(error)) => Err(RunError::Output {
                error,
                summary: Some(Box::new(summary)),
            }),
            None if !complete => Err(RunError::Interrupted(Box::new(summary))),
            None => Ok(summary),
        }
    }

    /// Stopped early by the stop flag with everything written: the checkpoint to resume from
    /// (with `checkpoint_every`, or when `opts.checkpoint_on_stop` says so), unless the state
    /// blew up; its path when written.
    fn checkpoint_on_stop<B: Backend>(
        &mut self,
        backend: &mut B,
        complete: bool,
        failure: &mut Option<Failure>,
    ) -> Option<std::path::PathBuf> {
        let steps_done = self.steps_done;
        let stopped = !complete && failure.is_none() && steps_done < self.model.grid.steps;
        let want = self.opts.checkpoint_every.is_some() || (self.opts.checkpoint_on_stop)();
        if !stopped || !want {
            return None;
        }
        if !backend.all_finite() {
            // A blown-up state must not replace the last good checkpoint.
            *failure = Some(Failure::NonFinite(non_finite_message(
                self.model,
                steps_done,
                self.opts.check_every,
            )));
            return None;
        }
        let written = self.checkpoint(backend, steps_done);
        let left = match written {
            Ok(true) => Some(self.checkpoint_path.clone()),
            Ok(false) => None,
            Err(e) => {
                *failure = Some(Failure::Output(e));
                None
            }
        };
        if let (None, Some(message)) = (&*failure, backend.failure()) {
            *failure = Some(Failure::Device {
                step: steps_done,
                message,
            });
        }
        left
    }
}

/// Write the checkpoint of the run after `step` steps: every queued monitor written, the file
/// flushed, its fingerprint and the backend's state into `path` ([`crate::checkpoint::write`]).
/// False (nothing written) after a device failure, which the caller reports.
fn checkpoint<B: Backend>(
    model: &Model,
    backend: &mut B,
    writer: &mut Hdf5Writer,
    monitors: &mut Monitors,
    step: usize,
    path: &std::path::Path,
) -> Result<bool, OutputError> {
    monitors.write_snapshots(writer, backend, true)?;
    monitors.write_probes(model, writer, backend, true);
    writer.write_terminal_spectra::<B::Real>(model)?;
    writer.flush::<B::Real>(step)?;
    let result = writer.fingerprint()?;
    let name = backend.name();
    let written =
        crate::checkpoint::write_with::<B::Real>(path, model, step, &result, &name, &mut |sink| {
            backend.write_state(step, sink)
        })?;
    Ok(written.is_some())
}

/// A file-size limit (`ulimit -f`, RLIMIT_FSIZE) on this process. A write that fails at the
/// limit leaves an HDF5 file whose recorded end lies past what reached the disk, and the
/// limit forbids extending the file to make it readable again
/// ([`crate::output::reopen_after_failure`]); so under a limit the loop stops *before* a step
/// whose writes could cross it, with the message of a failed write, and the file stays valid.
struct SizeLimit {
    /// The limit, bytes.
    limit: u64,
    /// Bytes one frame of each snapshot adds.
    frames: Vec<u64>,
    /// Room kept for what else a step may add: a new chunk of every probe series, HDF5's
    /// object headers and chunk indexes, the surface DFT datasets written at the end.
    margin: u64,
    /// What the finished file needs ([`crate::output::file_bytes`]).
    expected: u64,
}

impl SizeLimit {
    /// The limit this process runs under, for `model`'s file in `precision`; None without one.
    fn new(model: &Model, precision: Precision) -> Option<Self> {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only fills the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut r) } != 0
            || r.rlim_cur == libc::RLIM_INFINITY
        {
            return None;
        }
        let t = precision.bytes() as u64;
        let frames = model
            .snapshots
            .iter()
            .map(|s| s.regions.iter().map(|(_, r)| r.len() as u64 * t).sum())
            .collect();
        // A probe chunk is 4096 values of each component and of the time (f64).
        let probes: u64 = model
            .probes
            .iter()
            .map(|p| 4096 * (8 + t * p.components.len() as u64))
            .sum();
        // The surface DFT datasets (spectra, kept DFTs, far-field patterns), as the plan
        // estimates them for the file.
        let flux = crate::plan::output_bytes(model).flux;
        Some(SizeLimit {
            limit: r.rlim_cur,
            frames,
            margin: 128 * 1024 + probes + flux,
            expected: crate::output::file_bytes(model),
        })
    }

    /// Err when the writes of step `step` could take `output` past the limit.
    fn check(
        &self,
        model: &Model,
        step: usize,
        output: &std::path::Path,
    ) -> Result<(), OutputError> {
        let written = std::fs::metadata(output).map_or(0, |m| m.len());
        let frames: u64 = model
            .snapshots
            .iter()
            .zip(&self.frames)
            .filter(|(s, _)| step % s.every == 0)
            .map(|(_, b)| b)
            .sum();
        if written + frames + self.margin <= self.limit {
            return Ok(());
        }
        let d = crate::plan::bytes_h;
        Err(OutputError {
            path: output.to_path_buf(),
            message: format!(
                "the file reached the largest size this process may write (ulimit -f, {}) after {} written; the finished file needs about {}, {} more",
                d(self.limit),
                d(written),
                d(self.expected),
                d(self.expected.saturating_sub(written))
            ),
        })
    }
}

/// Why the loop stopped early (other than the stop flag).
enum Failure {
    NonFinite(String),
    Device { step: usize, message: String },
    Output(OutputError),
}

/// Explain a blow-up: when it was seen and what usually causes it in this model.
fn non_finite_message(model: &Model, step: usize, every: usize) -> String {
    let mut causes = Vec::new();
    // The scene's own materials that objects are made of: not the blends subpixel smoothing
    // adds to the table (a blend has epsilon < 1 only when one of these does).
    let mut used: Vec<u8> = model.objects.iter().map(|o| o.material).collect();
    used.sort_unstable();
    used.dedup();
    for m in used
        .iter()
        .map(|&id| &model.materials.materials[id as usize])
    {
        if !m.pec && m.epsilon < 1.0 {
            causes.push(format!(
                "material `{}` has epsilon {} < 1: waves there are faster than light in vacuum, so the Courant factor must be below {:.3}",
                m.name,
                m.epsilon,
                m.epsilon.sqrt()
            ));
        }
    }
    if model.precision == Precision::F32 && model.sources.iter().any(|s| s.amplitude.abs() > 1e20) {
        causes.push("a source amplitude above 1e20 overflows f32 fields: lower it or use precision = \"f64\"".into());
    }
    if causes.is_empty() {
        causes.push("an unstable time step (lower simulation.courant) or a source amplitude that overflows the precision".into());
    }
    format!(
        "the fields became NaN or infinite between steps {} and {step}; likely cause: {}",
        step.saturating_sub(every) + 1,
        causes.join("; ")
    )
}

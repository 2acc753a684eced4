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
    mut writer: Hdf5Writer,
    ranges: &[SlabRange],
    threads: usize,
    opts: &RunOptions,
    obs: &mut dyn Observer,
    start: usize,
) -> Result<Summary, RunError> {
    let g = &model.grid;
    obs.start(&RunInfo {
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
    });

    let mut phases = PhaseTimes::default();
    let mut monitors = Monitors::new(model);
    monitors.resume_after(start);
    let started = Instant::now();
    let mut last_report = started;
    let mut last_flush = started;
    let mut last_checkpoint = started;
    let mut checkpoints = 0;
    let mut steps_done = start;
    let mut failure = None;
    let checkpoint_path = opts.checkpoint_path();
    let size_limit = SizeLimit::new(model, <B::Real as crate::real::Real>::PRECISION);

    // The fused sweep runs one thread per slab: with fewer slabs than threads the two-pass
    // update, parallel within a slab, is the faster one, and the run says so.
    let mode = if backend.fused_sweep_is_per_slab() {
        super::step::mode_for_split(opts.step, ranges.len(), threads)
    } else {
        opts.step
    };
    let fewer_slabs = mode != opts.step;
    // Several steps per sweep need a thread per slab; the run line says how many it takes.
    let per_sweep = super::step::steps_per_sweep_for(opts.steps_per_sweep, ranges.len(), threads);
    let mut stepper = Stepper::new(model, backend, ranges)
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
    stepper.resume_after(start);
    let per_sweep = stepper.steps_per_sweep();
    let flux_in_sweep = stepper.flux_in_sweep();
    let mut n = start;
    while n < g.steps {
        // The steps up to the next one whose fields a monitor or check reads, in one sweep
        // where the engine can (the steps between are seen by nothing but the next step).
        // Monitors see E^{n+1} and H^{n+1/2}: the probes are queued after each step (within
        // a sweep as it passes them), a flux sample's planes within the sweep where the
        // engine reads them there, the rest now; all written when their data is here.
        let k =
            super::step::steps_until_monitors(model, n, opts.check_every, per_sweep, flux_in_sweep);
        stepper.step_many(k, &monitors.samples, &mut phases);
        n += k;
        let backend = &mut *stepper.backend;
        let t4 = Instant::now();
        let step = n;
        let now = Instant::now();
        // A failed write (a full disk) ends the run like an interrupt, after this step.
        let written = (|| -> Result<(), OutputError> {
            if let Some(limit) = &size_limit {
                limit.check(model, step, &opts.output)?;
            }
            let mut wrote_snapshot = monitors.write_snapshots(&mut writer, backend, false)?;
            for (s, snap) in model.snapshots.iter().enumerate() {
                if step % snap.every == 0 {
                    wrote_snapshot |= monitors.queue_snapshot(&mut writer, backend, s, step)?;
                }
            }
            if !model.fluxes.is_empty() {
                backend.accumulate_flux(step, g.dt);
            }
            let timed_flush = now.duration_since(last_flush) > Duration::from_secs(10);
            if timed_flush {
                // Flux spectra are cheap to form but not free: refresh them on the timed flushes.
                write_fluxes(&mut writer, backend, model, step, false)?;
            }
            if wrote_snapshot || timed_flush {
                monitors.write_probes(&model.probes, &mut writer, backend, false);
                writer.flush::<B::Real>(step)?;
                last_flush = Instant::now();
            }
            Ok(())
        })();
        phases.monitors += t4.elapsed();
        if let Err(e) = written {
            steps_done = step;
            failure = Some(Failure::Output(e));
            break;
        }

        if let Some(message) = backend.failure() {
            failure = Some(Failure::Device { step, message });
            break;
        }
        steps_done = step;
        if step % opts.check_every == 0 || step == g.steps {
            let c0 = Instant::now();
            let finite = backend.all_finite();
            phases.checks += c0.elapsed();
            if let Some(message) = backend.failure() {
                steps_done = step - 1;
                failure = Some(Failure::Device { step, message });
                break;
            }
            if !finite {
                failure = Some(Failure::NonFinite(non_finite_message(
                    model,
                    step,
                    opts.check_every,
                )));
                break;
            }
        }
        if now.duration_since(last_report) > Duration::from_millis(200) {
            last_report = now;
            obs.progress(&progress_from(
                g.cells(),
                start,
                step,
                g.steps,
                g.dt,
                started.elapsed(),
            ));
        }
        if opts.stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(every) = opts.checkpoint_every {
            if last_checkpoint.elapsed() >= every && step < g.steps {
                // A blown-up state must not replace the last good checkpoint.
                if !backend.all_finite() {
                    failure = Some(Failure::NonFinite(non_finite_message(
                        model,
                        step,
                        opts.check_every,
                    )));
                    break;
                }
                let c0 = Instant::now();
                let r = checkpoint(
                    model,
                    backend,
                    &mut writer,
                    &mut monitors,
                    step,
                    &checkpoint_path,
                );
                phases.checkpoint += c0.elapsed();
                last_checkpoint = Instant::now();
                match r {
                    Ok(true) => checkpoints += 1,
                    Ok(false) => {}
                    Err(e) => {
                        failure = Some(Failure::Output(e));
                        break;
                    }
                }
                if let Some(message) = backend.failure() {
                    failure = Some(Failure::Device { step, message });
                    break;
                }
            }
        }
    }

    // Whatever is still queued: wait for it (after a device failure, keep what reached the host).
    // After a failed write, still try to close the file cleanly: the first error is the one
    // reported.
    let t6 = Instant::now();
    let tail = (|| -> Result<(), OutputError> {
        monitors.write_snapshots(&mut writer, backend, true)?;
        monitors.write_probes(&model.probes, &mut writer, backend, true);
        write_fluxes(&mut writer, backend, model, steps_done, true)
    })();
    phases.monitors += t6.elapsed();
    let complete = steps_done == g.steps && failure.is_none() && tail.is_ok();
    let finished = writer.finish::<B::Real>(steps_done, complete);
    let complete = complete && finished.is_ok();
    if failure.is_none() {
        if let Err(e) = tail.and(finished) {
            failure = Some(Failure::Output(e));
        }
    }
    // Stopped early by the stop flag with everything written: the checkpoint to resume from.
    let mut left_checkpoint = None;
    let stopped = !complete && failure.is_none() && steps_done < g.steps;
    let want_checkpoint = opts.checkpoint_every.is_some() || (opts.checkpoint_on_stop)();
    if stopped && want_checkpoint && !backend.all_finite() {
        // A blown-up state must not replace the last good checkpoint.
        failure = Some(Failure::NonFinite(non_finite_message(
            model,
            steps_done,
            opts.check_every,
        )));
    } else if stopped && want_checkpoint {
        let c0 = Instant::now();
        let r = checkpoint(
            model,
            backend,
            &mut writer,
            &mut monitors,
            steps_done,
            &checkpoint_path,
        );
        phases.checkpoint += c0.elapsed();
        match r {
            Ok(true) => {
                checkpoints += 1;
                left_checkpoint = Some(checkpoint_path.clone());
            }
            Ok(false) => {}
            Err(e) => failure = Some(Failure::Output(e)),
        }
        if let (None, Some(message)) = (&failure, backend.failure()) {
            failure = Some(Failure::Device {
                step: steps_done,
                message,
            });
        }
    }
    if complete {
        // Nothing is left to resume; a checkpoint here would only be a stale copy of the run.
        let _ = std::fs::remove_file(&checkpoint_path);
    }
    let wall = started.elapsed();
    drop(writer);
    let device = backend.device_times();
    let summary = Summary {
        backend: backend.name(),
        cells: g.cells(),
        steps_done,
        steps: g.steps,
        wall,
        mcells_per_s: progress_from(g.cells(), start, steps_done, g.steps, g.dt, wall).mcells_per_s,
        phases,
        device,
        output: opts.output.clone(),
        complete,
        sidecar_warning: None,
        first_step: start,
        checkpoints,
        checkpoint: left_checkpoint,
    };
    obs.progress(&progress_from(
        g.cells(),
        start,
        steps_done,
        g.steps,
        g.dt,
        wall,
    ));
    if checkpoints > 0 {
        obs.message(&format!(
            "checkpoints: {checkpoints} written in {:.2} s ({:.0}% of the run){}",
            phases.checkpoint.as_secs_f64(),
            100.0 * phases.checkpoint.as_secs_f64() / wall.as_secs_f64().max(1e-9),
            summary
                .checkpoint
                .as_ref()
                .map_or(String::new(), |p| format!(
                    "; resume with `yee resume {}` ({})",
                    opts.output.display(),
                    p.display()
                ))
        ));
    }
    obs.finish(&summary);
    match failure {
        Some(Failure::NonFinite(message)) => {
            return Err(RunError::NonFinite {
                message,
                summary: Box::new(summary),
            })
        }
        Some(Failure::Device { step, message }) => {
            return Err(RunError::Device {
                step,
                message,
                summary: Box::new(summary),
            })
        }
        Some(Failure::Output(error)) => {
            return Err(RunError::Output {
                error,
                summary: Some(Box::new(summary)),
            })
        }
        None => {}
    }
    if !complete {
        return Err(RunError::Interrupted(Box::new(summary)));
    }
    Ok(summary)
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
    monitors.write_probes(&model.probes, writer, backend, true);
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

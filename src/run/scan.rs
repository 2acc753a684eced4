//! Running a scan (B-scan): every trace of the model's `[scan]` in one run, into one file
//! ([`crate::output::scan`]).
//!
//! The plan decides how the traces run ([`crate::plan::scan`]):
//! - one trace per worker: each worker thread has a rayon pool of one thread and builds, for
//!   each trace it takes, a CPU engine of one slab; workers take the next trace from a shared
//!   counter, so as many traces run at once as there are workers;
//! - several traces at once on each GPU: each worker thread builds, for each trace it takes,
//!   a CUDA engine of one slab on its GPU (its own streams), so that the traces' kernel
//!   launches overlap;
//! - one after another: each trace on the plan's engine (CPU slabs across the workers, or the
//!   GPUs), as a single run would.
//!
//! Either way a trace is stepped by the same [`Stepper`] with the same monitors as a single
//! run, on a pool that flushes subnormals as the run's does, and every cell's arithmetic does
//! not depend on the slab split: trace k's probe series and spectra are those of a single run
//! of trace k's model ([`crate::model::Scan::trace`]), bit for bit.
//!
//! Results reach the file in trace order: a trace that finishes before an earlier one waits
//! for it. Ctrl-C (the stop flag) abandons the traces being computed; the file keeps the
//! leading finished traces, says how many (`traces_done`) and has `complete = false`. That file
//! is the scan's checkpoint: resumed ([`RunOptions::resume`]), the scan reopens it
//! ([`ScanWriter::reopen`]) and runs traces `traces_done..traces` into it, each as it would
//! have run, so the finished file equals an uninterrupted scan's bit for bit.

use super::{
    start, Observer, PhaseTimes, Progress, Quiet, RunError, RunInfo, RunOptions, ScanInfo,
    StartError, Stepper, Summary,
};
use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, Engine};
use crate::decomp::SlabRange;
use crate::model::{Model, Precision, Scan};
use crate::output::scan::{ScanWriter, TraceRecord};
use crate::output::OutputError;
use crate::plan::scan::{ScanPlan, ScanSchedule};
use crate::real::Real;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// How one trace ended.
pub(super) enum TraceEnd {
    /// Every step ran: the trace, the host's time per phase, and the device's where the
    /// engine measures it ([`Backend::device_times`]).
    Done(Box<TraceRecord>, Box<PhaseTimes>, Option<Box<PhaseTimes>>),
    /// The stop flag was set (Ctrl-C, or another trace failed).
    Stopped,
    /// The fields became NaN or infinite by this step.
    NonFinite(usize),
    /// The device failed in this step.
    Device(usize, String),
    /// The trace's engine could not start.
    Start(StartError),
}

/// Step trace model `model` on `backend` (holding it split as `ranges`) through every step,
/// recording its probes and flux spectra as a single run's time loop does, in `mode` with up
/// to `per_sweep` steps per sweep. Stops at the end of a sweep when `stop` or `abort` is set.
fn run_trace<B: Backend>(
    model: &Model,
    backend: &mut B,
    ranges: &[SlabRange],
    check_every: usize,
    stop: &AtomicBool,
    abort: &AtomicBool,
    (mode, per_sweep): (crate::backend::StepMode, usize),
) -> TraceEnd {
    let g = &model.grid;
    let samples: Vec<_> = model
        .probes
        .iter()
        .flat_map(|p| p.samples.iter().copied())
        .collect();
    let mut series: Vec<Vec<Vec<f64>>> = model
        .probes
        .iter()
        .map(|p| vec![Vec::with_capacity(g.steps); p.components.len()])
        .collect();
    let mut rows = Vec::new();
    let mut combined = Vec::new();
    let mut drain = |backend: &mut B, series: &mut Vec<Vec<Vec<f64>>>, wait: bool| {
        if samples.is_empty() {
            return;
        }
        rows.clear();
        backend.drain_probes(&mut rows, wait);
        for row in rows.chunks_exact(samples.len()) {
            let mut first = 0;
            for (p, out) in model.probes.iter().zip(series.iter_mut()) {
                combined.clear();
                p.combine(&row[first..first + p.samples.len()], &mut combined);
                first += p.samples.len();
                for (s, v) in out.iter_mut().zip(&combined) {
                    s.push(*v);
                }
            }
        }
    };
    let mut phases = PhaseTimes::default();
    let mut stepper = Stepper::new(model, backend, ranges)
        .with_mode(mode)
        .with_steps_per_sweep(per_sweep);
    let per_sweep = stepper.steps_per_sweep();
    let flux_in_sweep = stepper.flux_in_sweep();
    let mut step = 0;
    while step < g.steps {
        // Monitors see E^{n+1} and H^{n+1/2}, as in the single run's loop: the probes after
        // every step (read within a sweep), the flux DFTs where a sweep ends or within it
        // (as the engine reads them), the checks where a sweep ends.
        let k =
            super::step::steps_until_monitors(model, step, check_every, per_sweep, flux_in_sweep);
        stepper.step_many(k, &samples, &mut phases);
        let backend = &mut *stepper.backend;
        let before = step;
        step += k;
        let t = Instant::now();
        if !model.fluxes.is_empty() {
            backend.accumulate_flux(step, g.dt);
        }
        // Every 4096 steps, the queued probe rows into the series.
        if step / 4096 > before / 4096 {
            drain(backend, &mut series, false);
        }
        phases.monitors += t.elapsed();
        if let Some(message) = backend.failure() {
            return TraceEnd::Device(step, message);
        }
        if step % check_every == 0 || step == g.steps {
            let c = Instant::now();
            let finite = backend.all_finite();
            phases.checks += c.elapsed();
            if !finite {
                return TraceEnd::NonFinite(step);
            }
        }
        if stop.load(Ordering::Relaxed) || abort.load(Ordering::Relaxed) {
            return TraceEnd::Stopped;
        }
    }
    let backend = &mut *stepper.backend;
    drain(backend, &mut series, true);
    let mut power = Vec::new();
    let mut incident = Vec::new();
    for (i, f) in model.fluxes.iter().enumerate() {
        // A trace keeps only its spectra: formed where the DFTs are.
        let Some(spectrum) = backend.flux_power(i) else {
            return TraceEnd::Device(g.steps, backend.failure().unwrap_or_default());
        };
        power.push(spectrum);
        incident.push(
            model
                .tfsf
                .as_ref()
                .map(|t| t.incident_intensity(&f.frequencies, g.dt, g.steps)),
        );
    }
    let device = backend.device_times().map(Box::new);
    TraceEnd::Done(
        Box::new(TraceRecord {
            probes: series,
            power,
            incident,
        }),
        Box::new(phases),
        device,
    )
}

/// The main thread's side of a scan: writes finished traces in order, reports progress, and
/// keeps the first failure.
pub(super) struct Collector<'a> {
    pub(super) writer: Option<ScanWriter>,
    /// Finished traces waiting for an earlier one.
    waiting: BTreeMap<usize, Box<TraceRecord>>,
    /// Traces in the file (the leading ones).
    done: usize,
    /// Traces in the file when this run started (0, or `traces_done` of a resumed scan).
    first: usize,
    traces: usize,
    phases: PhaseTimes,
    /// The traces' device time per phase, where the engine measures it (a GPU).
    device: Option<PhaseTimes>,
    failure: Option<RunError>,
    started: Instant,
    model: &'a Model,
    opts: &'a RunOptions,
}

impl<'a> Collector<'a> {
    /// A collector for a scan whose first `first` traces are in the file.
    pub(super) fn new(model: &'a Model, scan: &Scan, opts: &'a RunOptions, first: usize) -> Self {
        let now = Instant::now();
        Collector {
            writer: None,
            waiting: BTreeMap::new(),
            done: first,
            first,
            traces: scan.traces,
            phases: PhaseTimes::default(),
            device: None,
            failure: None,
            started: now,
            model,
            opts,
        }
    }

    /// Take trace `k`'s ending; false once the scan must stop (a failure).
    pub(super) fn take<T: Real>(
        &mut self,
        k: usize,
        end: TraceEnd,
        obs: &mut dyn Observer,
    ) -> bool {
        match end {
            TraceEnd::Done(record, phases, device) => {
                self.phases.add(&phases);
                if let Some(d) = device {
                    self.device.get_or_insert_with(Default::default).add(&d);
                }
                self.waiting.insert(k, record);
                while let Some(record) = self.waiting.remove(&self.done) {
                    let Some(writer) = self.writer.as_mut() else {
                        break;
                    };
                    let written = writer
                        .write_trace::<T>(self.done, &record)
                        .and_then(|_| writer.set_done(self.done + 1));
                    if let Err(error) = written {
                        self.fail(RunError::Output {
                            error,
                            summary: None,
                        });
                        return false;
                    }
                    self.done += 1;
                }
                // Progress counts traces: one report per finished trace.
                obs.progress(&self.progress());
                true
            }
            TraceEnd::Stopped => true,
            TraceEnd::NonFinite(step) => {
                self.fail(RunError::NonFinite {
                    message: format!(
                        "in trace {k} the fields became NaN or infinite between steps {} and {step}; likely cause: an unstable time step (lower simulation.courant) or a source amplitude that overflows the precision",
                        step.saturating_sub(self.opts.check_every) + 1
                    ),
                    summary: Box::new(self.summary("")),
                });
                false
            }
            TraceEnd::Device(step, message) => {
                self.fail(RunError::Device {
                    step,
                    message: format!("in trace {k}: {message}"),
                    summary: Box::new(self.summary("")),
                });
                false
            }
            TraceEnd::Start(e) => {
                self.fail(RunError::Backend(e));
                false
            }
        }
    }

    fn fail(&mut self, e: RunError) {
        if self.failure.is_none() {
            self.failure = Some(e);
        }
    }

    /// Progress in traces: `step` counts finished traces (with those of an earlier run); the
    /// throughput counts this run's.
    fn progress(&self) -> Progress {
        let elapsed = self.started.elapsed();
        let g = &self.model.grid;
        Progress {
            step: self.done,
            steps: self.traces,
            time: g.steps as f64 * g.dt,
            mcells_per_s: g.cells() as f64 * ((self.done - self.first) * g.steps) as f64
                / elapsed.as_secs_f64().max(1e-9)
                / 1e6,
            elapsed,
        }
    }

    fn summary(&self, backend: &str) -> Summary {
        let g = &self.model.grid;
        let wall = self.started.elapsed();
        let steps_done = self.done * g.steps;
        let first_step = self.first * g.steps;
        Summary {
            backend: backend.to_string(),
            cells: g.cells(),
            steps_done,
            steps: self.traces * g.steps,
            wall,
            mcells_per_s: g.cells() as f64 * (steps_done - first_step) as f64
                / wall.as_secs_f64().max(1e-9)
                / 1e6,
            phases: self.phases,
            device: self.device,
            output: self.opts.output.clone(),
            complete: self.done == self.traces,
            sidecar_warning: None,
            // A scan is not checkpointed mid-trace: its finished traces are its state, and a
            // resumed scan starts after those.
            first_step,
            checkpoints: 0,
            checkpoint: None,
        }
    }

    /// Close the file (complete when every trace is in), report, and return how the run ended.
    /// `parallel`: the traces this process ran at once (its workers' pass times are
    /// averaged over them); `at_once`: the traces the scan ran at once (over ranks, every
    /// rank's), as the report says.
    pub(super) fn end(
        mut self,
        backend: &str,
        (parallel, at_once): (usize, usize),
        obs: &mut dyn Observer,
    ) -> Result<Summary, RunError> {
        let complete = self.done == self.traces && self.failure.is_none();
        let closed: Result<(), OutputError> = match self.writer.as_mut() {
            Some(w) => w.finish(self.done, complete),
            None => Ok(()),
        };
        let had_writer = self.writer.is_some();
        drop(self.writer.take());
        // Scans take no snapshots: a sidecar of an earlier result at this path is stale.
        let sidecar_warning = if had_writer {
            crate::output::xdmf::update_sidecar(&self.opts.output, false)
                .err()
                .map(|e| format!("the XDMF sidecar is stale: {e}"))
        } else {
            None
        };
        let mut summary = self.summary(backend);
        summary.complete = complete && closed.is_ok();
        summary.sidecar_warning = sidecar_warning;
        // With traces at once, each worker's pass times add up: show their average.
        let scale = 1.0 / parallel.max(1) as f64;
        summary.phases.scale(scale);
        if let Some(d) = summary.device.as_mut() {
            d.scale(scale);
        }
        let secs = summary.wall.as_secs_f64().max(1e-9);
        obs.progress(&self.progress());
        obs.message(&format!(
            "scan: {} of {} traces in {:.2} s, {:.2} traces/s ({} at a time){}",
            self.done,
            self.traces,
            secs,
            (self.done - self.first) as f64 / secs,
            at_once,
            if self.first > 0 {
                format!("; {} were in the file before", self.first)
            } else {
                String::new()
            }
        ));
        obs.finish(&summary);
        if let Some(mut e) = self.failure {
            match &mut e {
                RunError::NonFinite { summary: s, .. } | RunError::Device { summary: s, .. } => {
                    **s = summary
                }
                RunError::Output { summary: s, .. } => *s = Some(Box::new(summary)),
                _ => {}
            }
            return Err(e);
        }
        if let Err(error) = closed {
            return Err(RunError::Output {
                error,
                summary: Some(Box::new(summary)),
            });
        }
        if !summary.complete {
            return Err(RunError::Interrupted(Box::new(summary)));
        }
        Ok(summary)
    }
}

/// What the observer is told before the first trace: `backend` on `slabs` with `threads`
/// (one trace's engine), and the scan's schedule.
pub(super) fn start_info(
    model: &Model,
    backend: String,
    slabs: Vec<SlabRange>,
    threads: usize,
    allocation: crate::backend::Allocation,
) -> RunInfo {
    let g = &model.grid;
    RunInfo {
        backend,
        cells: g.cells(),
        steps: g.steps,
        slabs,
        threads,
        allocation,
        courant: g.dt / crate::model::Grid::courant_limit_of(g.min_cell(), model.flat_axes()),
        dims: 3 - model.flat_axes().iter().filter(|&&f| f).count(),
    }
}

/// A resumed scan's file reopened with the traces already in it, or None for a new scan.
pub(super) type Resumed = Option<(ScanWriter, usize)>;

/// Run every trace of `model`'s `[scan]`, writing `opts.output`: [`super::run`] for a model
/// with a scan.
pub fn run_scan(
    model: &Model,
    opts: &RunOptions,
    obs: &mut dyn Observer,
) -> Result<Summary, RunError> {
    let scan = model
        .scan
        .as_ref()
        .expect("run_scan runs a model with a [scan]");
    let start::Prepared {
        threads,
        hardware,
        options: plan_options,
        plan,
    } = start::Prepared::of(model, opts);
    let schedule = plan
        .scan
        .clone()
        .expect("the plan of a model with a [scan] schedules it");
    // An explicit --slabs asks for the slab split: keep it.
    let schedule = if opts.slabs.is_some() && schedule.schedule == ScanSchedule::TracePerWorker {
        ScanPlan {
            schedule: ScanSchedule::OneAfterAnother,
            traces_in_parallel: 1,
            reason: "--slabs asks for the slab split: the traces run one after another".into(),
            ..schedule
        }
    } else {
        schedule
    };
    // Resumed, the result file is the state: reopen it before any engine starts, so that a
    // refused file costs nothing.
    let resumed: Resumed = if opts.resume {
        Some(ScanWriter::reopen(&opts.output, model).map_err(|e| RunError::Resume(e.to_string()))?)
    } else {
        None
    };
    let g = &model.grid;
    obs.message(&format!(
        "scan of {} traces ({} cells x {} steps each), {} at a time: {}",
        scan.traces,
        g.cells(),
        g.steps,
        schedule.traces_in_parallel,
        schedule.reason
    ));
    match schedule.schedule {
        ScanSchedule::TracePerWorker | ScanSchedule::TracesPerGpu => match model.precision {
            Precision::F32 => per_worker::<f32>(model, scan, opts, &schedule, resumed, obs),
            Precision::F64 => per_worker::<f64>(model, scan, opts, &schedule, resumed, obs),
        },
        ScanSchedule::OneAfterAnother => {
            obs.message(&plan.reason);
            let pool = start::worker_pool(threads).map_err(RunError::Backend)?;
            one_after_another(
                model,
                scan,
                opts,
                (&hardware, &plan_options, &plan),
                (&pool, threads),
                resumed,
                obs,
            )
        }
    }
}

/// Traces several at once, one per worker thread, each on a one-slab engine: a CPU one, or a
/// CUDA one on the worker's GPU ([`ScanPlan::gpus`]).
fn per_worker<T: Real>(
    model: &Model,
    scan: &Scan,
    opts: &RunOptions,
    schedule: &ScanPlan,
    resumed: Resumed,
    obs: &mut dyn Observer,
) -> Result<Summary, RunError>
where
    CpuBackend<T>: Backend<Real = T>,
{
    let parallel = schedule.traces_in_parallel.max(1);
    let backend = if schedule.gpus.is_empty() {
        "cpu"
    } else {
        "cuda"
    };
    let (writer, first) = match resumed {
        Some(r) => r,
        None => (
            ScanWriter::create::<T>(&opts.output, model, backend).map_err(|error| {
                RunError::Output {
                    error,
                    summary: None,
                }
            })?,
            0,
        ),
    };
    let mut collector = Collector::new(model, scan, opts, first);
    collector.writer = Some(writer);
    let whole = [SlabRange {
        x0: 0,
        x1: model.grid.shape[0],
    }];
    // Each worker builds its own engines: no one engine's allocation stands for the run's.
    obs.start_scan(
        &start_info(
            model,
            backend.into(),
            whole.to_vec(),
            parallel,
            Default::default(),
        ),
        &ScanInfo {
            traces: scan.traces,
            first,
            at_once: parallel,
            schedule: if schedule.gpus.is_empty() {
                "one trace per worker".into()
            } else {
                "several traces at once per GPU".into()
            },
        },
    );
    let traces: Vec<usize> = (first..scan.traces).collect();
    let next = AtomicUsize::new(0);
    let abort = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, TraceEnd)>();
    std::thread::scope(|s| {
        let work = Workers {
            model,
            scan,
            opts,
            traces: &traces,
            next: &next,
            abort: &abort,
            gpus: &schedule.gpus,
        };
        work.spawn::<T>(s, parallel, tx);
        for (k, end) in rx {
            if !collector.take::<T>(k, end, obs) {
                abort.store(true, Ordering::SeqCst);
            }
        }
    });
    collector.end(backend, (parallel, parallel), obs)
}

/// Worker threads that run traces of a scan, one trace per thread on a one-slab engine (CPU,
/// or CUDA on the worker's GPU).
pub(super) struct Workers<'a> {
    pub(super) model: &'a Model,
    pub(super) scan: &'a Scan,
    pub(super) opts: &'a RunOptions,
    /// The traces to run, in the order they are taken.
    pub(super) traces: &'a [usize],
    /// The index into `traces` of the next trace to take.
    pub(super) next: &'a AtomicUsize,
    /// Set when the scan must stop (a failure): no worker takes another trace, and the traces
    /// under way stop at the end of their step.
    pub(super) abort: &'a AtomicBool,
    /// The GPU (driver ordinal) of each worker, whose traces run there; empty: every worker
    /// runs its traces on the CPU.
    pub(super) gpus: &'a [usize],
}

impl<'a> Workers<'a> {
    /// Start `parallel` workers in `s`: each takes the next trace of the list until none is
    /// left or the stop flag or `abort` is set, and sends each trace's ending, with its
    /// number, to `tx`. The channel closes when the last worker ends.
    pub(super) fn spawn<'s, T: Real>(
        &self,
        s: &'s std::thread::Scope<'s, 'a>,
        parallel: usize,
        tx: mpsc::Sender<(usize, TraceEnd)>,
    ) where
        CpuBackend<T>: Backend<Real = T>,
    {
        for w in 0..parallel {
            let tx = tx.clone();
            let Workers {
                model,
                scan,
                opts,
                traces,
                next,
                abort,
                gpus,
            } = *self;
            if let Some(&gpu) = gpus.get(w) {
                s.spawn(move || {
                    while let Some(k) = next_trace(traces, next, &opts.stop, abort) {
                        let trace = scan.trace(model, k);
                        let end = on_gpu(&trace, gpu, opts, abort);
                        if tx.send((k, end)).is_err() {
                            break;
                        }
                    }
                });
                continue;
            }
            s.spawn(move || {
                let whole = [SlabRange {
                    x0: 0,
                    x1: model.grid.shape[0],
                }];
                // One thread per trace: the engine's own parallel loops run on it alone.
                let pool = match start::worker_pool(1) {
                    Ok(p) => p,
                    Err(e) => {
                        let _ = tx.send((0, TraceEnd::Start(e)));
                        return;
                    }
                };
                while let Some(k) = next_trace(traces, next, &opts.stop, abort) {
                    let trace = scan.trace(model, k);
                    let end = pool.install(|| {
                        let mut b = CpuBackend::<T>::new(&trace, &whole);
                        // One slab on one thread: it sweeps the steps asked for.
                        run_trace(
                            &trace,
                            &mut b,
                            &whole,
                            opts.check_every,
                            &opts.stop,
                            abort,
                            (opts.step, opts.steps_per_sweep),
                        )
                    });
                    if tx.send((k, end)).is_err() {
                        break;
                    }
                }
            });
        }
    }
}

/// The next trace of `traces` for a worker to take (`next` counts those taken), or None when
/// none is left or the scan stops (`stop`: Ctrl-C; `abort`: a failure).
fn next_trace(
    traces: &[usize],
    next: &AtomicUsize,
    stop: &AtomicBool,
    abort: &AtomicBool,
) -> Option<usize> {
    if stop.load(Ordering::Relaxed) || abort.load(Ordering::Relaxed) {
        return None;
    }
    traces.get(next.fetch_add(1, Ordering::SeqCst)).copied()
}

/// Trace model `trace` on a CUDA engine of one slab on GPU `gpu` (driver ordinal), built and
/// stepped on this thread, as [`run_trace`] steps any engine.
#[cfg(feature = "cuda")]
fn on_gpu(trace: &Model, gpu: usize, opts: &RunOptions, abort: &AtomicBool) -> TraceEnd {
    let whole = [SlabRange {
        x0: 0,
        x1: trace.grid.shape[0],
    }];
    let placement = crate::backend::cuda::placement::Placement {
        ranges: whole.to_vec(),
        ordinals: vec![gpu],
    };
    let engine = match start::cuda_on(trace, &placement) {
        Ok(e) => e,
        Err(e) => return TraceEnd::Start(StartError::Cuda(e)),
    };
    // As a single run of one slab on this GPU steps it.
    let mode = (
        opts.step,
        super::step::steps_per_sweep_for(opts.steps_per_sweep, 1, 1),
    );
    let every = opts.check_every;
    let stop = &opts.stop;
    match engine {
        Engine::CudaF32(mut b) => run_trace(trace, &mut b, &whole, every, stop, abort, mode),
        Engine::CudaF64(mut b) => run_trace(trace, &mut b, &whole, every, stop, abort, mode),
        Engine::BlochCudaF32(mut b) => run_trace(trace, &mut b, &whole, every, stop, abort, mode),
        Engine::BlochCudaF64(mut b) => run_trace(trace, &mut b, &whole, every, stop, abort, mode),
        _ => unreachable!("cuda_on builds CUDA engines"),
    }
}

/// Without the `cuda` feature no trace runs on a GPU (the plan never schedules one there).
#[cfg(not(feature = "cuda"))]
fn on_gpu(_: &Model, _: usize, _: &RunOptions, _: &AtomicBool) -> TraceEnd {
    TraceEnd::Start(StartError::Cuda(crate::backend::cuda::CudaError::NotBuilt))
}

/// Traces one after another, each on the engine the plan chooses (as a single run).
fn one_after_another(
    model: &Model,
    scan: &Scan,
    opts: &RunOptions,
    (hardware, options, plan): (
        &crate::plan::Hardware,
        &crate::plan::PlanOptions,
        &crate::plan::Plan,
    ),
    (pool, threads): (&rayon::ThreadPool, usize),
    resumed: Resumed,
    obs: &mut dyn Observer,
) -> Result<Summary, RunError> {
    let (writer, first) = match resumed {
        Some((w, first)) => (Some(w), first),
        None => (None, 0),
    };
    let mut collector = Collector::new(model, scan, opts, first);
    collector.writer = writer;
    let mut backend_name = String::from("cpu");
    let mut started_obs = false;
    let never = AtomicBool::new(false);
    for k in first..scan.traces {
        if opts.stop.load(Ordering::Relaxed) {
            break;
        }
        let trace = scan.trace(model, k);
        // The plan's placement holds every trace (they share the grid); its reason was said.
        let started = start::start_engine(&trace, hardware, options, plan, pool, &mut Quiet);
        let (engine, ranges) = match started {
            Ok(e) => e,
            Err(e) if k == first => return Err(RunError::Backend(e)),
            Err(e) => {
                collector.take::<f32>(k, TraceEnd::Start(e), obs);
                break;
            }
        };
        let r = &ranges;
        let every = opts.check_every;
        // The CPU engines step on the run's pool (as a single run's do); CUDA on this thread.
        macro_rules! trace_on {
            ($b:ident, $t:ty, |$x:ident| $run:expr) => {{
                backend_name = $b.name();
                if !started_obs {
                    started_obs = true;
                    obs.start_scan(
                        &start_info(
                            model,
                            backend_name.clone(),
                            ranges.clone(),
                            threads,
                            $b.allocation(),
                        ),
                        &ScanInfo {
                            traces: scan.traces,
                            first,
                            at_once: 1,
                            schedule: "one after another".into(),
                        },
                    );
                }
                if collector.writer.is_none() {
                    collector.writer = Some(
                        ScanWriter::create::<$t>(&opts.output, model, &backend_name).map_err(
                            |error| RunError::Output {
                                error,
                                summary: None,
                            },
                        )?,
                    );
                }
                let $x = &mut $b;
                let end = $run;
                collector.take::<$t>(k, end, obs)
            }};
        }
        let threads = pool.current_num_threads();
        // The CPU's fused sweep runs a thread per slab; a GPU's is parallel within one.
        let cpu = !matches!(engine, Engine::BlochCpuF32(_) | Engine::BlochCpuF64(_))
            && matches!(engine, Engine::CpuF32(_) | Engine::CpuF64(_));
        let mode = (
            if cpu {
                super::step::mode_for_split(opts.step, r.len(), threads)
            } else {
                opts.step
            },
            super::step::steps_per_sweep_for(opts.steps_per_sweep, r.len(), threads),
        );
        let go_on = match engine {
            Engine::CpuF32(mut b) => trace_on!(b, f32, |x| pool
                .install(|| { run_trace(&trace, x, r, every, &opts.stop, &never, mode) })),
            Engine::CpuF64(mut b) => trace_on!(b, f64, |x| pool
                .install(|| { run_trace(&trace, x, r, every, &opts.stop, &never, mode) })),
            Engine::BlochCpuF32(mut b) => trace_on!(b, f32, |x| pool
                .install(|| { run_trace(&trace, x, r, every, &opts.stop, &never, mode) })),
            Engine::BlochCpuF64(mut b) => trace_on!(b, f64, |x| pool
                .install(|| { run_trace(&trace, x, r, every, &opts.stop, &never, mode) })),
            #[cfg(feature = "cuda")]
            Engine::CudaF32(mut b) => {
                trace_on!(b, f32, |x| run_trace(
                    &trace, x, r, every, &opts.stop, &never, mode
                ))
            }
            #[cfg(feature = "cuda")]
            Engine::CudaF64(mut b) => {
                trace_on!(b, f64, |x| run_trace(
                    &trace, x, r, every, &opts.stop, &never, mode
                ))
            }
            #[cfg(feature = "cuda")]
            Engine::BlochCudaF32(mut b) => {
                trace_on!(b, f32, |x| run_trace(
                    &trace, x, r, every, &opts.stop, &never, mode
                ))
            }
            #[cfg(feature = "cuda")]
            Engine::BlochCudaF64(mut b) => {
                trace_on!(b, f64, |x| run_trace(
                    &trace, x, r, every, &opts.stop, &never, mode
                ))
            }
        };
        if !go_on {
            break;
        }
    }
    collector.end(&backend_name, (1, 1), obs)
}

//! The time loop, shared by every backend: it reads as the algorithm.
//!
//! Per step: update H, exchange H halos, update E (with the source currents), exchange E
//! halos, record monitors; now and then check for NaN/Inf, report progress and flush output.
//! Each phase is timed. The loop stops at the end of a step when the stop flag is set
//! (Ctrl-C), the fields blow up, the backend reports a device failure or a write fails (a full
//! disk), leaving a valid file with `complete = false` that holds everything written so far.
//!
//! Monitors are queued, not read: probe rows, snapshot regions and flux DFTs are recorded by
//! the backend (on a GPU, without waiting for it) and written when their data has reached the
//! host, so the device keeps computing while the HDF5 writer works. The CPU backend reads at
//! once, so there everything is written in the step it was taken. The file is the same either
//! way: the same probe series, snapshot rows and flux spectra.

use crate::backend::cpu::CpuBackend;
use crate::backend::{Allocation, Backend, GatherTicket};
use crate::decomp::{HaloPlan, SlabRange};
use crate::model::{Component, Model, Precision, Region};
use crate::output::{Hdf5Writer, OutputError};
use crate::real::Real;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which engine to run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// CUDA when the plan puts the grid on GPUs, else the CPU.
    Auto,
    /// The rayon CPU engine.
    Cpu,
    /// CUDA GPUs; an error if none can be used.
    Cuda,
}

/// How to run a model.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The HDF5 file to write. It replaces a file already there only once it is valid (see
    /// `output`); keeping other runs away from it is the caller's part (`yee run` holds an
    /// `output::claim::OutputClaim` for the whole run).
    pub output: PathBuf,
    /// Engine choice.
    pub backend: BackendChoice,
    /// Number of slabs (None: one per worker thread, each at least 8 planes thick).
    pub slabs: Option<usize>,
    /// Worker threads (None: all cores).
    pub threads: Option<usize>,
    /// Set to stop at the end of the current step.
    pub stop: Arc<AtomicBool>,
    /// Steps between NaN/Inf checks of the whole grid.
    pub check_every: usize,
    /// CUDA: driver ordinals of the GPUs to use (None: as the plan decides).
    pub gpus: Option<Vec<usize>>,
    /// CUDA: slabs on each GPU (None: one).
    pub slabs_per_gpu: Option<usize>,
}

impl RunOptions {
    /// Defaults for writing `output`.
    pub fn new(output: PathBuf) -> Self {
        RunOptions {
            output,
            backend: BackendChoice::Auto,
            slabs: None,
            threads: None,
            stop: Arc::new(AtomicBool::new(false)),
            check_every: 100,
            gpus: None,
            slabs_per_gpu: None,
        }
    }
}

/// What the run is about to do (for the observer).
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// Backend name.
    pub backend: String,
    /// Grid cells.
    pub cells: u64,
    /// Steps.
    pub steps: usize,
    /// Slabs' x ranges.
    pub slabs: Vec<SlabRange>,
    /// Worker threads.
    pub threads: usize,
    /// Bytes allocated by category.
    pub allocation: Allocation,
}

/// A progress report.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Steps done.
    pub step: usize,
    /// Steps in all.
    pub steps: usize,
    /// Simulated time reached (s).
    pub time: f64,
    /// Throughput so far, million cell updates per second.
    pub mcells_per_s: f64,
    /// Wall time so far.
    pub elapsed: Duration,
}

/// Wall time spent in each phase of the loop.
#[derive(Debug, Clone, Copy, Default)]
pub struct PhaseTimes {
    /// H update.
    pub update_h: Duration,
    /// E update (with sources and CPML).
    pub update_e: Duration,
    /// Halo exchanges.
    pub exchange: Duration,
    /// Probes, snapshots and file writes.
    pub monitors: Duration,
    /// NaN/Inf checks.
    pub checks: Duration,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Backend name.
    pub backend: String,
    /// Grid cells.
    pub cells: u64,
    /// Steps completed.
    pub steps_done: usize,
    /// Steps requested.
    pub steps: usize,
    /// Wall time of the loop.
    pub wall: Duration,
    /// Million cell updates per second over the loop.
    pub mcells_per_s: f64,
    /// Time per phase.
    pub phases: PhaseTimes,
    /// The output file.
    pub output: PathBuf,
    /// True when every step ran.
    pub complete: bool,
    /// Why the XDMF sidecar could not be written (or a stale one removed), if so.
    pub sidecar_warning: Option<String>,
}

/// Receives progress; the engine does not depend on any terminal library.
pub trait Observer: Send {
    /// Called once before the first step.
    fn start(&mut self, _info: &RunInfo) {}
    /// Called a few times a second.
    fn progress(&mut self, _p: &Progress) {}
    /// A message for the user (e.g. why a backend was chosen).
    fn message(&mut self, _m: &str) {}
    /// Called once at the end, however the run ended.
    fn finish(&mut self, _s: &Summary) {}
}

/// An observer that ignores everything (tests, libraries).
pub struct Quiet;
impl Observer for Quiet {}

/// Why a run did not complete.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Stopped by the user; the file is valid and holds everything so far.
    #[error("interrupted at step {} of {}; results so far are in `{}` (complete = false)", .0.steps_done, .0.steps, .0.output.display())]
    Interrupted(Box<Summary>),
    /// The fields blew up.
    #[error("{message}; results up to step {} are in `{}` (complete = false)", .summary.steps_done, .summary.output.display())]
    NonFinite {
        /// What happened and the likely cause.
        message: String,
        /// The run so far.
        summary: Box<Summary>,
    },
    /// The device failed mid-run (a CUDA error); the file holds everything written before.
    #[error("{message} (detected in step {step}); results up to step {} are in `{}` (complete = false)", .summary.steps_done, .summary.output.display())]
    Device {
        /// The step being computed when the failure was seen (1-based).
        step: usize,
        /// What the backend said, with the driver's error.
        message: String,
        /// The run so far.
        summary: Box<Summary>,
    },
    /// Writing the output failed; after the file was created, the run stopped there and the
    /// file holds what was written before.
    #[error("{error}")]
    Output {
        /// Which file, what failed, how much was written and how much more is needed.
        error: OutputError,
        /// The run so far, when the file had been created.
        summary: Option<Box<Summary>>,
    },
    /// The requested backend cannot run here.
    #[error("{0}")]
    Backend(String),
}

/// Run `model` to completion (or interruption), writing `opts.output`.
pub fn run(model: &Model, opts: &RunOptions, obs: &mut dyn Observer) -> Result<Summary, RunError> {
    let threads = opts
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .start_handler(|_| crate::fpu::flush_subnormals_to_zero())
        .build()
        .map_err(|e| RunError::Backend(format!("cannot start {threads} worker threads: {e}")))?;
    // The plan decides where the grid goes and how it is split; say why before allocating.
    let plan_options = crate::plan::PlanOptions {
        backend: opts.backend,
        slabs: opts.slabs,
        threads: Some(threads),
        price_per_gpu_hour: None,
    };
    let plan = crate::plan::plan(
        model,
        &crate::plan::Hardware::detect(None, None),
        &plan_options,
    );
    obs.message(&plan.reason);
    // CUDA when the plan chose it (auto) or it was asked for; None: the CPU below.
    if let Some(result) =
        crate::backend::cuda::select::run_planned(model, opts, &plan, threads, obs)
    {
        return result;
    }
    if !plan.fits {
        return Err(RunError::Backend(format!(
            "{} {}",
            plan.reason,
            plan.suggestions.join(" ")
        )));
    }
    let ranges = plan.ranges();
    pool.install(|| match model.precision {
        Precision::F32 => {
            let mut b = CpuBackend::<f32>::new(model, &ranges);
            time_loop(model, &mut b, &ranges, threads, opts, obs)
        }
        Precision::F64 => {
            let mut b = CpuBackend::<f64>::new(model, &ranges);
            time_loop(model, &mut b, &ranges, threads, opts, obs)
        }
    })
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
            magnetic: Vec::with_capacity(model.sources.len()),
            steps_done: 0,
        }
    }

    /// One full step: H with magnetic sources at n dt, H halos, E with sources at
    /// (n + 1/2) dt, E halos.
    pub fn step(&mut self) {
        self.step_timed(&mut PhaseTimes::default());
    }

    /// [`Stepper::step`], adding the wall time of each phase to `phases`.
    pub fn step_timed(&mut self, phases: &mut PhaseTimes) {
        let n = self.steps_done;
        let t0 = Instant::now();
        magnetic_source_values(
            self.model,
            n as f64 * self.model.grid.dt,
            &mut self.magnetic,
        );
        self.backend.update_h(&self.magnetic);
        let t1 = Instant::now();
        self.backend.exchange(&self.halos.after_h);
        let t2 = Instant::now();
        source_values(
            self.model,
            (n as f64 + 0.5) * self.model.grid.dt,
            &mut self.currents,
        );
        self.backend.update_e(&self.currents);
        let t3 = Instant::now();
        self.backend.exchange(&self.halos.after_e);
        let t4 = Instant::now();
        phases.update_h += t1 - t0;
        phases.exchange += (t2 - t1) + (t4 - t3);
        phases.update_e += t3 - t2;
        self.steps_done += 1;
    }

    /// Steps taken so far.
    pub fn steps_done(&self) -> usize {
        self.steps_done
    }
}

/// Source currents J at time t for every model source.
pub fn source_values(model: &Model, t: f64, out: &mut Vec<f64>) {
    out.clear();
    out.extend(model.sources.iter().map(|s| s.current(t)));
}

/// Magnetic currents M at time t for every model source (0 for those without a magnetic sheet).
pub fn magnetic_source_values(model: &Model, t: f64, out: &mut Vec<f64>) {
    out.clear();
    out.extend(model.sources.iter().map(|s| s.magnetic_current(t)));
}

/// The shared time loop over any backend.
pub fn time_loop<B: Backend>(
    model: &Model,
    backend: &mut B,
    ranges: &[SlabRange],
    threads: usize,
    opts: &RunOptions,
    obs: &mut dyn Observer,
) -> Result<Summary, RunError> {
    let g = &model.grid;
    let mut writer =
        Hdf5Writer::create::<B::Real>(&opts.output, model, &backend.name()).map_err(|error| {
            RunError::Output {
                error,
                summary: None,
            }
        })?;
    obs.start(&RunInfo {
        backend: backend.name(),
        cells: g.cells(),
        steps: g.steps,
        slabs: ranges.to_vec(),
        threads,
        allocation: {
            // The backend's slabs plus the host monitor buffers (the snapshot gather buffer and
            // the flux DFTs, which the CPU backend holds): what the plan lists.
            let mut a = backend.allocation();
            a.monitors += crate::plan::monitor_staging_bytes(model, <B::Real as Real>::PRECISION);
            a
        },
    });

    let mut phases = PhaseTimes::default();
    let mut monitors = Monitors::new(model);
    let started = Instant::now();
    let mut last_report = started;
    let mut last_flush = started;
    let mut steps_done = 0;
    let mut failure = None;

    let mut stepper = Stepper::new(model, backend, ranges);
    for n in 0..g.steps {
        stepper.step_timed(&mut phases);
        let backend = &mut *stepper.backend;
        let t4 = Instant::now();
        let step = n + 1;

        // Monitors see E^{n+1} and H^{n+1/2}: queued now, written when their data is here.
        if !monitors.samples.is_empty() {
            backend.queue_probes(&monitors.samples);
        }
        let now = Instant::now();
        // A failed write (a full disk) ends the run like an interrupt, after this step.
        let written = (|| -> Result<(), OutputError> {
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
                write_fluxes(&mut writer, backend, model, step)?;
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
            obs.progress(&progress(g.cells(), step, g.steps, g.dt, started.elapsed()));
        }
        if opts.stop.load(Ordering::Relaxed) {
            break;
        }
    }

    // Whatever is still queued: wait for it (after a device failure, keep what reached the host).
    // After a failed write, still try to close the file cleanly: the first error is the one
    // reported.
    let t6 = Instant::now();
    let tail = (|| -> Result<(), OutputError> {
        monitors.write_snapshots(&mut writer, backend, true)?;
        monitors.write_probes(&model.probes, &mut writer, backend, true);
        write_fluxes(&mut writer, backend, model, steps_done)
    })();
    phases.monitors += t6.elapsed();
    let wall = started.elapsed();
    let complete = steps_done == g.steps && failure.is_none() && tail.is_ok();
    let finished = writer.finish::<B::Real>(steps_done, complete);
    let complete = complete && finished.is_ok();
    if failure.is_none() {
        if let Err(e) = tail.and(finished) {
            failure = Some(Failure::Output(e));
        }
    }
    drop(writer);
    if let Some(Failure::Output(e)) = &mut failure {
        if !crate::output::reopen_after_failure(&opts.output) {
            e.message.push_str(", and the file was left unreadable");
        }
    }
    // The sidecar lets ParaView and VisIt open the snapshots; a failure here loses no data,
    // but it is reported (also with --quiet) and a stale sidecar never outlives its result.
    let sidecar_warning =
        crate::output::xdmf::update_sidecar(&opts.output, !model.snapshots.is_empty())
            .err()
            .map(|e| format!("the XDMF sidecar is missing or stale: {e}"));
    let summary = Summary {
        backend: backend.name(),
        cells: g.cells(),
        steps_done,
        steps: g.steps,
        wall,
        mcells_per_s: progress(g.cells(), steps_done, g.steps, g.dt, wall).mcells_per_s,
        phases,
        output: opts.output.clone(),
        complete,
        sidecar_warning,
    };
    obs.progress(&progress(g.cells(), steps_done, g.steps, g.dt, wall));
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

/// Why the loop stopped early (other than the stop flag).
enum Failure {
    NonFinite(String),
    Device { step: usize, message: String },
    Output(OutputError),
}

/// Store every flux spectrum accumulated so far (after a device failure, the file keeps the
/// spectra last written).
fn write_fluxes<B: Backend>(
    writer: &mut Hdf5Writer,
    backend: &mut B,
    model: &Model,
    steps_done: usize,
) -> Result<(), OutputError> {
    for i in 0..model.fluxes.len() {
        if let Some(dft) = backend.flux_dft(i) {
            writer.write_flux(i, &dft, steps_done)?;
        }
    }
    Ok(())
}

/// The time loop's side of the queued monitors: what is queued and how far the file has got.
struct Monitors {
    /// Every probe sample in model order: one row of values per step.
    samples: Vec<(Component, [usize; 3])>,
    /// Each snapshot's components and regions.
    snapshots: Vec<Vec<(Component, Region)>>,
    /// Queued snapshot components, oldest first: (snapshot, step, component, ticket).
    pending: VecDeque<(usize, usize, usize, GatherTicket)>,
    /// The file row of the frame each snapshot is writing.
    rows: Vec<usize>,
    /// Probe rows written (row r holds step r + 1).
    probe_rows: usize,
    values: Vec<f64>,
    /// One row of probe values, one per probe component (see `Probe::combine`).
    combined: Vec<f64>,
}

impl Monitors {
    fn new(model: &Model) -> Self {
        Monitors {
            samples: model
                .probes
                .iter()
                .flat_map(|p| p.samples.iter().copied())
                .collect(),
            snapshots: model.snapshots.iter().map(|s| s.regions.clone()).collect(),
            pending: VecDeque::new(),
            rows: vec![0; model.snapshots.len()],
            probe_rows: 0,
            values: Vec::new(),
            combined: Vec::new(),
        }
    }

    /// Write the oldest queued snapshot component, waiting for its data if needed. True if
    /// it was written (false after a device failure: the frame is lost).
    fn write_oldest<B: Backend>(
        &mut self,
        writer: &mut Hdf5Writer,
        backend: &mut B,
    ) -> Result<bool, OutputError> {
        let Some((s, step, ci, ticket)) = self.pending.pop_front() else {
            return Ok(false);
        };
        let Some(values) = backend.take_gather(ticket) else {
            return Ok(false);
        };
        if ci == 0 {
            self.rows[s] = writer.begin_snapshot(s, step)?;
        }
        writer.write_snapshot(s, ci, self.rows[s], values)?;
        Ok(true)
    }

    /// Write queued snapshot components in order while their data is in host memory (with
    /// `wait`, all of them). True if any was written.
    fn write_snapshots<B: Backend>(
        &mut self,
        writer: &mut Hdf5Writer,
        backend: &mut B,
        wait: bool,
    ) -> Result<bool, OutputError> {
        let mut wrote = false;
        while let Some((_, _, _, ticket)) = self.pending.front() {
            if !wait && !backend.gather_ready(ticket) {
                break;
            }
            wrote |= self.write_oldest(writer, backend)?;
        }
        Ok(wrote)
    }

    /// Queue snapshot `s` taken at `step`, component by component, writing each as soon as
    /// its data is here (at once on the CPU, so one gather buffer serves every component). A
    /// frame of `s` still queued from its last turn is written first (waiting for it): the
    /// backend reuses its buffers. True if anything was written.
    fn queue_snapshot<B: Backend>(
        &mut self,
        writer: &mut Hdf5Writer,
        backend: &mut B,
        s: usize,
        step: usize,
    ) -> Result<bool, OutputError> {
        let mut wrote = false;
        while self.pending.iter().any(|p| p.0 == s) {
            wrote |= self.write_oldest(writer, backend)?;
        }
        for ci in 0..self.snapshots[s].len() {
            let (c, region) = self.snapshots[s][ci];
            let ticket = backend.queue_gather(c, &region);
            self.pending.push_back((s, step, ci, ticket));
            wrote |= self.write_snapshots(writer, backend, false)?;
        }
        Ok(wrote)
    }

    /// Hand the probe rows that reached the host to the writer (with `wait`, every row queued).
    /// Drain the queued probe rows (waiting for the rest when `wait`), combine each row into
    /// one value per component of `probes` and hand it to the writer.
    fn write_probes<B: Backend>(
        &mut self,
        probes: &[crate::model::Probe],
        writer: &mut Hdf5Writer,
        backend: &mut B,
        wait: bool,
    ) {
        if self.samples.is_empty() {
            return;
        }
        self.values.clear();
        backend.drain_probes(&mut self.values, wait);
        for row in self.values.chunks_exact(self.samples.len()) {
            self.probe_rows += 1;
            // Each probe's stencil values, in order, become one value per component.
            self.combined.clear();
            let mut first = 0;
            for p in probes {
                p.combine(&row[first..first + p.samples.len()], &mut self.combined);
                first += p.samples.len();
            }
            writer.push_probes(self.probe_rows, &self.combined);
        }
    }
}

fn progress(cells: u64, step: usize, steps: usize, dt: f64, elapsed: Duration) -> Progress {
    let secs = elapsed.as_secs_f64().max(1e-9);
    Progress {
        step,
        steps,
        time: step as f64 * dt,
        mcells_per_s: cells as f64 * step as f64 / secs / 1e6,
        elapsed,
    }
}

/// Explain a blow-up: when it was seen and what usually causes it in this model.
fn non_finite_message(model: &Model, step: usize, every: usize) -> String {
    let mut causes = Vec::new();
    for m in &model.materials.materials {
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

//! Running a model: the engine the plan chose, the shared time loop over it, the output file.
//!
//! - `start`: builds the one [`Engine`] value (CPU or CUDA, f32 or f64) from the plan,
//!   re-planning without a GPU that runs out of memory ([`follow_plan`]); [`run`] makes the
//!   one `match` over it and calls the shared loop in each arm.
//! - `step`: one step as the algorithm, each half step a timed list of passes ([`Stepper`]).
//! - `time_loop`: the loop over steps: monitors, NaN/Inf checks, progress, flushes, stops.
//! - `monitors`: the loop's side of the queued probe rows, snapshot frames and flux spectra.
//! - `observer`: what the run reports while it goes ([`Observer`]).
//!
//! [`run_backend`] is the caller of the loop for one backend: it creates the output file (or,
//! resuming, loads the checkpoint's state into the backend and reopens the file where the
//! checkpoint left it: [`crate::checkpoint`]), runs the loop, and writes the XDMF sidecar once
//! the file is closed.

pub mod incident;
mod monitors;
mod observer;
mod options;
#[cfg(feature = "mpi")]
mod ranks;
mod scan;
#[cfg(feature = "mpi")]
mod scan_ranks;
pub mod sparameters;
mod start;
mod step;
mod time_loop;

pub use crate::plan::BackendChoice;
pub use observer::{Observer, Progress, Quiet, RunInfo, ScanInfo};
pub use options::{threads_refused, EngineChoice, Refusal, MAX_THREADS};
pub use scan::run_scan;
pub use start::{all_cores, cpu_engine, follow_plan, start_engine, worker_pool, Prepared, Started};
pub use step::{
    magnetic_source_values, source_values, steps_per_sweep_for, PhaseTimes, Stepper,
    DEFAULT_STEPS_PER_SWEEP,
};
pub use time_loop::time_loop;

use crate::backend::{Backend, Engine};
use crate::decomp::SlabRange;
use crate::model::Model;
use crate::output::{Hdf5Writer, OutputError};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

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
    /// Write a checkpoint ([`crate::checkpoint::path_for`] the output) each time this much
    /// wall time has passed since the last one (or the start); also when the stop flag ends
    /// the run. None: only when a stop asks for one (`checkpoint_on_stop`).
    pub checkpoint_every: Option<Duration>,
    /// Called once when the stop flag ended the run early: true if that stop asks for a
    /// checkpoint even without `checkpoint_every` (`yee run` answers true after SIGTERM).
    pub checkpoint_on_stop: fn() -> bool,
    /// Continue the run from the output's checkpoint, appending to the output, instead of
    /// starting it.
    pub resume: bool,
    /// The fused sweep or the two-pass reference (`--two-pass`); the same bits either way.
    pub step: crate::backend::StepMode,
    /// Steps the fused sweep takes at once between monitor reads where the engine can
    /// (`--steps-per-sweep`; 1: one step per sweep); the same bits either way.
    pub steps_per_sweep: usize,
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
            checkpoint_every: None,
            checkpoint_on_stop: || false,
            resume: false,
            step: crate::backend::StepMode::default(),
            steps_per_sweep: step::DEFAULT_STEPS_PER_SWEEP,
        }
    }

    /// The checkpoint file of this run ([`crate::checkpoint::path_for`] its output).
    pub fn checkpoint_path(&self) -> PathBuf {
        crate::checkpoint::path_for(&self.output)
    }
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
    /// Time per phase, as the host saw it.
    pub phases: PhaseTimes,
    /// The device's own time per phase, where the backend queues its work on one
    /// ([`crate::backend::Backend::device_times`]: a GPU), or `None`.
    pub device: Option<PhaseTimes>,
    /// The output file.
    pub output: PathBuf,
    /// True when every step ran.
    pub complete: bool,
    /// Why the XDMF sidecar could not be written (or a stale one removed), if so.
    pub sidecar_warning: Option<String>,
    /// The step the run started from (0, or a checkpoint's step when resumed).
    pub first_step: usize,
    /// Checkpoints written (their time is `phases.checkpoint`).
    pub checkpoints: usize,
    /// The checkpoint the run left to resume from, if it stopped after writing one.
    pub checkpoint: Option<PathBuf>,
}

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
    /// The requested backend cannot run here; nothing was written.
    #[error("{0}")]
    Backend(StartError),
    /// A resume was refused: the checkpoint is missing, unreadable or of another run, or
    /// the result file changed since it was written; nothing was written.
    #[error("{0}")]
    Resume(String),
    /// Over MPI ranks, on a rank other than 0: rank 0 failed before the run started and says
    /// why; this rank stops with the same exit code and prints nothing.
    #[error("rank 0 stopped the run (exit code {0})")]
    OtherRank(u8),
}

/// Why no engine could be started for a run.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The CPU worker pool could not be created.
    #[error("cannot start {threads} worker threads: {source}")]
    Threads {
        /// Threads asked for.
        threads: usize,
        /// What rayon said.
        source: rayon::ThreadPoolBuildError,
    },
    /// The plan found nothing that holds the grid.
    #[error("{reason} {}", .suggestions.join(" "))]
    DoesNotFit {
        /// The plan's reason.
        reason: String,
        /// The plan's suggestions.
        suggestions: Vec<String>,
    },
    /// `--backend cuda` was asked for, but CUDA cannot be used here (the plan found no GPU).
    #[error("{0}")]
    Refused(String),
    /// A mode source or monitor could not be solved (bad input: each line names its scene key).
    #[error("{0}")]
    Modes(String),
    /// The GPUs ran out of memory while the engine was allocated, and no plan without the
    /// GPUs that failed holds the grid (`--backend cuda`).
    #[error("{0}: the grid does not fit on the GPUs; use --backend cpu, more GPUs, or a coarser cell size")]
    GpuMemory(String),
    /// The CUDA engine could not start (driver, NVRTC, module load, ...).
    #[error("{0}")]
    Cuda(crate::backend::cuda::CudaError),
    /// Over MPI ranks: this rank's engine could not start (its GPU, its memory); this rank
    /// says why, the others stop with it.
    #[error("rank {rank} on {host}: {why}")]
    RankEngine {
        /// The rank.
        rank: usize,
        /// Its host.
        host: String,
        /// What failed.
        why: String,
    },
}

impl RunError {
    /// The run so far, where the error carries one.
    fn summary_mut(&mut self) -> Option<&mut Summary> {
        match self {
            RunError::Interrupted(s) => Some(s),
            RunError::NonFinite { summary, .. } | RunError::Device { summary, .. } => Some(summary),
            RunError::Output { summary, .. } => summary.as_deref_mut(),
            RunError::Backend(_) | RunError::Resume(_) | RunError::OtherRank(_) => None,
        }
    }
}

/// Run `model` to completion (or interruption), writing `opts.output`.
pub fn run(model: &Model, opts: &RunOptions, obs: &mut dyn Observer) -> Result<Summary, RunError> {
    // Mode sources and monitors are solved once, before anything is allocated (every rank
    // solves its own copy: the solve is deterministic, so they agree to the bit).
    crate::modes::prepare(model).map_err(|e| RunError::Backend(StartError::Modes(e)))?;
    // Diffraction monitors' incident power, from a column of the source's medium.
    incident::prepare(model);
    // An S-parameter sweep runs one excitation per port, each through here.
    if model.sparameters.is_some() {
        return sparameters::run_sweep(model, opts, obs);
    }
    // Over several MPI ranks, the rank split and the driver (`ranks`); one process as below.
    #[cfg(feature = "mpi")]
    {
        let ranks = crate::ranks::world();
        if ranks.size > 1 {
            // A scan's traces are shared out to the ranks; any other run splits its grid.
            if model.scan.is_some() {
                return scan_ranks::run_scan_over_ranks(model, opts, obs, ranks);
            }
            return ranks::run_ranks(model, opts, obs, ranks);
        }
    }
    // A [scan] runs its traces into one file (`scan`).
    if model.scan.is_some() {
        return scan::run_scan(model, opts, obs);
    }
    // The plan decides where the grid goes and how it is split; say why before allocating.
    let start::Prepared {
        threads,
        hardware,
        options: plan_options,
        plan,
    } = start::Prepared::of(model, opts);
    let pool = start::worker_pool(threads).map_err(RunError::Backend)?;
    obs.message(&plan.reason);
    let (engine, ranges) = start::start_engine(model, &hardware, &plan_options, &plan, &pool, obs)
        .map_err(RunError::Backend)?;
    // The one dispatch point: every arm runs the same generic loop on a concrete engine. The
    // CPU engines step on the run's worker pool.
    let r = &ranges;
    match engine {
        Engine::CpuF32(mut b) => pool.install(|| run_backend(model, &mut b, r, threads, opts, obs)),
        Engine::CpuF64(mut b) => pool.install(|| run_backend(model, &mut b, r, threads, opts, obs)),
        Engine::BlochCpuF32(mut b) => {
            pool.install(|| run_backend(model, &mut b, r, threads, opts, obs))
        }
        Engine::BlochCpuF64(mut b) => {
            pool.install(|| run_backend(model, &mut b, r, threads, opts, obs))
        }
        #[cfg(feature = "cuda")]
        Engine::CudaF32(mut b) => run_backend(model, &mut b, r, threads, opts, obs),
        #[cfg(feature = "cuda")]
        Engine::CudaF64(mut b) => run_backend(model, &mut b, r, threads, opts, obs),
        #[cfg(feature = "cuda")]
        Engine::BlochCudaF32(mut b) => run_backend(model, &mut b, r, threads, opts, obs),
        #[cfg(feature = "cuda")]
        Engine::BlochCudaF64(mut b) => run_backend(model, &mut b, r, threads, opts, obs),
    }
}

/// Run the time loop on `backend` (holding `model` split as `ranges`): create `opts.output`,
/// step, close it, and write the XDMF sidecar beside it.
pub fn run_backend<B: Backend>(
    model: &Model,
    backend: &mut B,
    ranges: &[SlabRange],
    threads: usize,
    opts: &RunOptions,
    obs: &mut dyn Observer,
) -> Result<Summary, RunError> {
    let (writer, start) = if opts.resume {
        resume(model, backend, ranges, opts)?
    } else {
        let writer = Hdf5Writer::create::<B::Real>(&opts.output, model, &backend.name()).map_err(
            |error| RunError::Output {
                error,
                summary: None,
            },
        )?;
        // A checkpoint left by an earlier run of this output belonged to the file just
        // replaced (removed only now: a run that fails to start keeps the old run resumable).
        let _ = std::fs::remove_file(opts.checkpoint_path());
        (writer, 0)
    };
    let mut result =
        time_loop::time_loop_from(model, backend, writer, ranges, threads, opts, obs, start);
    if let Err(RunError::Output {
        error,
        summary: Some(_),
    }) = &mut result
    {
        if !crate::output::reopen_after_failure(&opts.output) {
            error.message.push_str(", and the file was left unreadable");
        }
    }
    // The sidecar lets ParaView and VisIt open the snapshots; a failure here loses no data,
    // but it is reported (also with --quiet) and a stale sidecar never outlives its result.
    let sidecar_warning =
        crate::output::xdmf::update_sidecar(&opts.output, !model.snapshots.is_empty())
            .err()
            .map(|e| format!("the XDMF sidecar is missing or stale: {e}"));
    let summary = match &mut result {
        Ok(s) => Some(s),
        Err(e) => e.summary_mut(),
    };
    if let Some(s) = summary {
        s.sidecar_warning = sidecar_warning;
    }
    result
}

/// Load the output's checkpoint into `backend` (holding `model` split as `ranges`) and reopen
/// the output where the checkpoint left it: the writer and the step to continue after.
fn resume<B: Backend>(
    model: &Model,
    backend: &mut B,
    ranges: &[SlabRange],
    opts: &RunOptions,
) -> Result<(Hdf5Writer, usize), RunError> {
    let path = opts.checkpoint_path();
    let refused = |e: crate::checkpoint::CheckpointError| RunError::Resume(e.to_string());
    let header = crate::checkpoint::read_header(&path).map_err(refused)?;
    header.check(&path, model).map_err(refused)?;
    let read = |request: Option<&crate::backend::StateRequest>| {
        crate::checkpoint::read_part::<B::Real>(&path, model, request).map_err(|e| e.to_string())
    };
    let halos = crate::decomp::HaloPlan::new(ranges, &model.boundaries);
    let copies: Vec<_> = halos
        .after_h
        .iter()
        .chain(&halos.after_e)
        .cloned()
        .collect();
    backend.import_state_from(&read, &copies).map_err(|e| {
        RunError::Resume(format!("refusing the checkpoint `{}`: {e}", path.display()))
    })?;
    let writer = Hdf5Writer::reopen(&opts.output, model, header.step, &header.result)
        .map_err(|e| RunError::Resume(format!("refusing to resume: {e}")))?;
    Ok((writer, header.step))
}

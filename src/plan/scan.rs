//! How the traces of a scan are scheduled: the plan's decision, its one-sentence reason and
//! the time it implies.
//!
//! On the CPU a small grid splits badly: every pass of a step ends with the workers waiting for
//! each other, and a grid of a few thousand cells per worker spends more time there than in
//! the update. A scan has a better split than the grid: whole traces. So when the grid is
//! small ([`TRACE_PER_WORKER_MAX_CELLS`]) and there are several traces and several workers,
//! each worker runs whole traces, each trace on one slab, as many at once as there are workers
//! (and as host memory holds). A large grid keeps the plan's slab split and runs its traces one
//! after another.
//!
//! On CUDA a small grid's step is bound by kernel launches, not memory: each pass launches its
//! kernels one after another, and the grid's update is over before the next launch lands. So
//! when one trace fits on one GPU, each GPU runs several traces at once, each an engine of its
//! own (its own streams) stepped by a host thread of its own: their launches overlap and the
//! GPU's bandwidth is shared. As many run at once as hide one trace's launches behind the
//! others' updates ([`traces_per_gpu`]), up to [`TRACES_PER_GPU_MAX`] and as the GPU's memory
//! and the host's threads hold, on every GPU the run may use.

use super::{DeviceKind, Plan, PlanBackend, CUDA_CONTEXT_RESERVE};
use serde::Serialize;

/// Grids up to this many cells run one trace per worker thread. Above it, a slab per worker
/// holds at least half a million cells (on 2 workers), where the synchronisation at the end of
/// each pass (tens of microseconds) is a small part of a step (milliseconds), and one trace per
/// worker would multiply the memory by the worker count for little gain.
pub const TRACE_PER_WORKER_MAX_CELLS: u64 = 1_000_000;

/// Traces one GPU runs at once at most. Each has a host thread that launches its kernels (a
/// GPU host has some 8 to 16 cores per GPU) and an engine of its own in the GPU's memory;
/// eight hide the launches of a grid whose update takes an eighth of a launch's time.
pub const TRACES_PER_GPU_MAX: usize = 8;

/// Device memory a trace's engine takes beyond the plan's bytes for its grid: its copy of the
/// kernel module, its streams and events (the context itself is shared, and reserved once per
/// GPU).
pub const ENGINE_RESERVE: u64 = 32 << 20;

/// How a scan's traces run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScanSchedule {
    /// Each worker thread runs whole traces, each on one slab; several traces at once.
    TracePerWorker,
    /// Each GPU runs whole traces, several at once: each trace an engine of its own on one
    /// GPU, stepped by a host thread of its own ([`ScanPlan::gpus`]).
    TracesPerGpu,
    /// Traces one after another, each on the plan's slabs (CPU threads or GPUs).
    OneAfterAnother,
}

/// The scan part of a plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScanPlan {
    /// Number of traces.
    pub traces: usize,
    /// How they run.
    pub schedule: ScanSchedule,
    /// Traces computed at the same time.
    pub traces_in_parallel: usize,
    /// Why, in one sentence.
    pub reason: String,
    /// Wall time of one trace, seconds (None when nothing fits).
    pub seconds_per_trace: Option<f64>,
    /// Wall time of the whole scan, seconds.
    pub seconds: Option<f64>,
    /// With [`ScanSchedule::TracesPerGpu`], the GPU (driver ordinal) of each worker: worker
    /// w runs its traces on `gpus[w]`. Empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<usize>,
}

/// Schedule `traces` traces of the grid `plan` describes (one trace), with `threads` CPU
/// worker threads; `gpus`: the GPUs (indices into the plan's devices, which are the driver
/// ordinals) the run may use, for a CUDA plan.
pub fn schedule(plan: &Plan, traces: usize, threads: usize, gpus: &[usize]) -> ScanPlan {
    if let Some(per_gpu) = on_gpus(plan, traces, threads, gpus) {
        return per_gpu;
    }
    let host_memory = host_memory(plan);
    let per_trace = plan.bytes.total.max(1);
    let fit_in_memory = if host_memory == 0 {
        1
    } else {
        (host_memory / per_trace).max(1) as usize
    };
    let small = plan.cells <= TRACE_PER_WORKER_MAX_CELLS;
    let parallel = threads.min(traces).min(fit_in_memory).max(1);
    let (schedule, parallel, reason) = match plan.backend {
        PlanBackend::Cpu if small && parallel > 1 => (
            ScanSchedule::TracePerWorker,
            parallel,
            format!(
                "the grid of {} cells is too small to split well across workers, so each of {parallel} worker threads runs whole traces on one slab, {parallel} traces at a time",
                super::report::group(plan.cells)
            ),
        ),
        PlanBackend::Cpu => {
            let why = if traces == 1 {
                "a single trace".to_string()
            } else if threads <= 1 {
                "one worker thread".to_string()
            } else if !small {
                format!(
                    "the grid of {} cells is large enough to split well (above {})",
                    super::report::group(plan.cells),
                    super::report::group(TRACE_PER_WORKER_MAX_CELLS)
                )
            } else {
                "host memory holds one trace at a time".to_string()
            };
            (
                ScanSchedule::OneAfterAnother,
                1,
                format!(
                    "{why}: the traces run one after another, each on the plan's {} slab{}",
                    plan.slabs.len(),
                    if plan.slabs.len() == 1 { "" } else { "s" }
                ),
            )
        }
        PlanBackend::Cuda => (
            ScanSchedule::OneAfterAnother,
            1,
            format!(
                "{}: the traces run one after another on the plan's GPUs",
                if traces == 1 {
                    "a single trace"
                } else {
                    "one trace takes more than one GPU or slab"
                }
            ),
        ),
        PlanBackend::None => (
            ScanSchedule::OneAfterAnother,
            1,
            "nothing holds one trace".to_string(),
        ),
    };
    // The run time model is bandwidth-bound: traces that run at once share the host's
    // bandwidth, so each takes `parallel` times as long as one trace on every worker.
    let seconds_per_trace = plan.estimate.seconds.map(|s| s * parallel as f64);
    let rounds = traces.div_ceil(parallel) as f64;
    ScanPlan {
        traces,
        schedule,
        traces_in_parallel: parallel,
        reason,
        seconds_per_trace,
        seconds: seconds_per_trace.map(|s| s * rounds),
        gpus: Vec::new(),
    }
}

/// A CUDA plan's traces several at once on each GPU, when one trace takes one slab on one
/// GPU and more than one trace runs at once; None otherwise.
fn on_gpus(plan: &Plan, traces: usize, threads: usize, gpus: &[usize]) -> Option<ScanPlan> {
    if plan.backend != PlanBackend::Cuda || !plan.fits || plan.slabs.len() != 1 || traces < 2 {
        return None;
    }
    let per_trace = plan.slabs[0].bytes + ENGINE_RESERVE;
    // Every GPU the run may use that holds one trace, with how many it holds.
    let holding: Vec<(usize, usize)> = gpus
        .iter()
        .filter_map(|&g| {
            let d = plan.devices.get(g)?;
            let usable = d.memory_bytes.saturating_sub(CUDA_CONTEXT_RESERVE);
            (d.kind == DeviceKind::Gpu && usable >= per_trace)
                .then(|| (g, (usable / per_trace) as usize))
        })
        .collect();
    let step = plan.estimate.seconds_per_step?;
    let launches = plan.estimate.overhead_fraction.unwrap_or(0.0);
    let wanted = traces_per_gpu(launches);
    let per_gpu: Vec<(usize, usize)> = holding
        .iter()
        .map(|&(g, fit)| (g, wanted.min(fit)))
        .collect();
    let host_side = super::assign::host_side_bytes(&plan.bytes);
    let host_memory = host_memory(plan);
    let host_fit = if host_side == 0 || host_memory == 0 {
        usize::MAX
    } else {
        (host_memory / host_side).max(1) as usize
    };
    let cap = traces.min(threads.max(1)).min(host_fit);
    let workers = deal(&per_gpu, cap);
    if workers.len() < 2 {
        let why = if threads <= 1 {
            "one host thread"
        } else if host_fit < 2 {
            "host memory holds one trace's buffers at a time"
        } else if per_gpu.len() == 1 && wanted < 2 {
            "one trace's update fills its step (few launches)"
        } else {
            "the GPU's memory holds one trace at a time"
        };
        return Some(one_at_a_time_on_gpus(plan, traces, why));
    }
    let parallel = workers.len();
    let busiest = per_gpu
        .iter()
        .map(|(g, _)| workers.iter().filter(|w| *w == g).count())
        .max()
        .unwrap_or(1);
    // Each trace's kernels run one after another on its streams (its update and its launch
    // latency, as one trace alone), and the traces on a GPU share its bandwidth.
    let update = step / (1.0 + launches);
    let seconds_per_step = (busiest as f64 * update).max(step);
    let seconds_per_trace = seconds_per_step * plan.steps as f64;
    let used = per_gpu.iter().filter(|(g, _)| workers.contains(g)).count();
    let fit = per_gpu.iter().map(|(_, n)| *n).min().unwrap_or(1);
    let limit = if parallel == traces {
        "every trace at once".to_string()
    } else if parallel == threads {
        format!(
            "as many as the {threads} host thread{} allow",
            if threads == 1 { "" } else { "s" }
        )
    } else if fit < wanted {
        "as many as its memory holds".to_string()
    } else if wanted == TRACES_PER_GPU_MAX {
        format!("at most {TRACES_PER_GPU_MAX}")
    } else {
        "enough to hide one trace's launches behind the others' updates".to_string()
    };
    let reason = format!(
        "one trace takes one GPU and its step is {} kernel launches ({} of launches, {} of update), so {} runs up to {busiest} trace{} at once ({limit}), each an engine of its own stepped by a host thread of its own",
        if launches > 1.0 { "mostly" } else { "partly" },
        super::report::duration_h(step - update),
        super::report::duration_h(update),
        if used == 1 {
            "the GPU".to_string()
        } else {
            format!("each of {used} GPUs")
        },
        if busiest == 1 { "" } else { "s" },
    );
    Some(ScanPlan {
        traces,
        schedule: ScanSchedule::TracesPerGpu,
        traces_in_parallel: parallel,
        reason,
        seconds_per_trace: Some(seconds_per_trace),
        seconds: Some(seconds_per_trace * traces.div_ceil(parallel) as f64),
        gpus: workers,
    })
}

/// The host memory available to the run `plan` describes (0 when unknown).
fn host_memory(plan: &Plan) -> u64 {
    plan.devices
        .iter()
        .find(|d| d.kind == DeviceKind::Host)
        .map_or(0, |d| d.memory_bytes)
}

/// A CUDA plan's traces one after another on the plan's GPU, for the reason `why`.
fn one_at_a_time_on_gpus(plan: &Plan, traces: usize, why: &str) -> ScanPlan {
    let seconds_per_trace = plan.estimate.seconds;
    ScanPlan {
        traces,
        schedule: ScanSchedule::OneAfterAnother,
        traces_in_parallel: 1,
        reason: format!("{why}: the traces run one after another on the plan's GPU"),
        seconds_per_trace,
        seconds: seconds_per_trace.map(|s| s * traces as f64),
        gpus: Vec::new(),
    }
}

/// Traces one GPU runs at once for a step whose launches take `launches` times its update:
/// enough that the others' updates fill one trace's step (update plus launches), so
/// 1 + launches rounded up, at most [`TRACES_PER_GPU_MAX`].
pub fn traces_per_gpu(launches: f64) -> usize {
    let wanted = (1.0 + launches.max(0.0)).ceil();
    (wanted.min(TRACES_PER_GPU_MAX as f64) as usize).max(1)
}

/// Up to `cap` workers over the GPUs `per_gpu` (a GPU and how many traces it runs at once),
/// dealt round-robin so that a cap below the total spreads them: the GPU of each worker.
fn deal(per_gpu: &[(usize, usize)], cap: usize) -> Vec<usize> {
    let mut workers = Vec::new();
    for round in 0.. {
        let before = workers.len();
        for &(g, n) in per_gpu {
            if round < n && workers.len() < cap {
                workers.push(g);
            }
        }
        if workers.len() == before {
            break;
        }
    }
    workers
}

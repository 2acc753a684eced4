//! How the traces of a scan are scheduled: the plan's decision, its one-sentence reason and
//! the time it implies.
//!
//! On the CPU a small grid splits badly: every pass of a step ends with the workers waiting for
//! each other, and a grid of a few thousand cells per worker spends more time there than in
//! the update. A scan has a better split than the grid: whole traces. So when the grid is
//! small ([`TRACE_PER_WORKER_MAX_CELLS`]) and there are several traces and several workers,
//! each worker runs whole traces, each trace on one slab, as many at once as there are workers
//! (and as host memory holds). A large grid keeps the plan's slab split and runs its traces one
//! after another. On CUDA the traces run one after another on the plan's GPUs.

use super::{DeviceKind, Plan, PlanBackend};
use serde::Serialize;

/// Grids up to this many cells run one trace per worker thread. Above it, a slab per worker
/// holds at least half a million cells (on 2 workers), where the synchronisation at the end of
/// each pass (tens of microseconds) is a small part of a step (milliseconds), and one trace per
/// worker would multiply the memory by the worker count for little gain.
pub const TRACE_PER_WORKER_MAX_CELLS: u64 = 1_000_000;

/// How a scan's traces run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScanSchedule {
    /// Each worker thread runs whole traces, each on one slab; several traces at once.
    TracePerWorker,
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
}

/// Schedule `traces` traces of the grid `plan` describes (one trace), with `threads` CPU
/// worker threads.
pub fn schedule(plan: &Plan, traces: usize, threads: usize) -> ScanPlan {
    let host_memory = plan
        .devices
        .iter()
        .find(|d| d.kind == DeviceKind::Host)
        .map_or(0, |d| d.memory_bytes);
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
            "the traces run one after another on the plan's GPUs".to_string(),
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
    }
}

//! What a run tells the outside while it goes: an observer interface, so the engine does not
//! depend on a terminal library and tests run quiet.

use super::Summary;
use crate::backend::Allocation;
use crate::decomp::SlabRange;
use std::time::Duration;

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
    /// The time step as a fraction of the grid's stability limit (the scene's `courant`).
    pub courant: f64,
    /// Axes with derivatives: 3, or 2 (1) for a grid flat along one (two) axes, whose time
    /// step is a fraction of the 2-D (1-D) stability limit.
    pub dims: usize,
}

/// What a scan is about to do, beside its [`RunInfo`] (that of one trace's engine): its
/// progress reports count traces, not steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanInfo {
    /// Traces in all.
    pub traces: usize,
    /// Traces already in the file (a resumed scan), where progress starts.
    pub first: usize,
    /// Traces computed at the same time.
    pub at_once: usize,
    /// How the traces run, in words ("one trace per worker", "one after another").
    pub schedule: String,
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

/// Receives progress; the engine does not depend on any terminal library.
pub trait Observer: Send {
    /// Called once before the first step.
    fn start(&mut self, _info: &RunInfo) {}
    /// Called once before the first trace of a scan, instead of [`Observer::start`]; its
    /// progress reports then count traces (`step` of `steps` is traces done of traces). The
    /// default hands `info` to [`Observer::start`].
    fn start_scan(&mut self, info: &RunInfo, _scan: &ScanInfo) {
        self.start(info)
    }
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

/// The progress after `step` of `steps` steps of a grid of `cells` cells, `elapsed` into a
/// loop that started after step `first` (0, or a checkpoint's step when resumed): the
/// throughput counts the steps this loop did.
pub(super) fn progress_from(
    cells: u64,
    first: usize,
    step: usize,
    steps: usize,
    dt: f64,
    elapsed: Duration,
) -> Progress {
    let secs = elapsed.as_secs_f64().max(1e-9);
    Progress {
        step,
        steps,
        time: step as f64 * dt,
        mcells_per_s: cells as f64 * step.saturating_sub(first) as f64 / secs / 1e6,
        elapsed,
    }
}

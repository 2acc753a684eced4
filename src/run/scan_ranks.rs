//! A scan (B-scan) over MPI ranks: the traces farmed out to the ranks, one file.
//!
//! A scan's traces are independent runs of one grid, so over ranks they are shared out rather
//! than the grid split (as gprMax's MPI task farm does): rank r runs traces `first + r`,
//! `first + r + R`, ... on its own worker threads, one trace per worker on a one-slab CPU
//! engine, exactly as one process's scan runs them ([`super::scan`]), so every trace is the bits
//! of a single run. Each finished trace travels to rank 0, whose collector writes the file in
//! trace order (a trace that finishes before an earlier one waits for it), so the file is the
//! one-process scan's, bit for bit.
//!
//! Stopping agrees across ranks: a failed trace on any rank, or rank 0's stop flag, makes rank
//! 0 tell every rank to abort; a rank whose own stop flag is set (a signal to that process)
//! says so when its workers have stopped, and rank 0 stops the rest. The file then keeps the
//! leading finished traces with `complete = false`, and `yee resume` continues it, over any
//! number of ranks or as one process. Every message is small and goes to or from rank 0 with
//! [`SCAN_TAG`]; each waiting side polls and sleeps rather than spinning in MPI.

use super::scan::{start_info, Collector, Resumed, TraceEnd, Workers};
use super::{Observer, Quiet, RunError, RunOptions, ScanInfo, StartError, Summary};
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::decomp::SlabRange;
use crate::model::{Model, Precision, Scan};
use crate::output::scan::{ScanWriter, TraceRecord};
use crate::plan::scan::ScanSchedule;
use crate::ranks::{Ranks, World, SCAN_TAG};
use crate::real::Real;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a waiting side sleeps between polls: short against a trace (seconds), long
/// enough that an idle rank costs no core.
const POLL: Duration = Duration::from_millis(2);

/// What a message says (its first word).
mod kind {
    /// A rank's trace finished: the trace number and its record's values.
    pub const DONE: u64 = 0;
    /// A rank's trace became NaN or infinite at a step.
    pub const NON_FINITE: u64 = 1;
    /// A rank's trace failed on its device at a step, with a message.
    pub const DEVICE: u64 = 2;
    /// A rank could not start a trace, with a message.
    pub const START: u64 = 3;
    /// A rank's workers have all ended; the second word is 1 if its stop flag was set.
    pub const FINISHED: u64 = 4;
    /// Rank 0 to a rank: stop taking traces and stop those under way.
    pub const ABORT: u64 = 10;
    /// Rank 0 to a rank: the scan is over (every rank has finished).
    pub const END: u64 = 11;
}

/// A message: four words (kind, trace, step or flag, number of values), the values, then text.
fn encode(kind: u64, trace: usize, step: usize, values: &[f64], text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + values.len() * 8 + text.len());
    for w in [kind, trace as u64, step as u64, values.len() as u64] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(text.as_bytes());
    out
}

/// The parts of a message [`encode`] made: (kind, trace, step, values, text).
fn decode(data: &[u8]) -> (u64, usize, usize, Vec<f64>, String) {
    let word = |i: usize| u64::from_le_bytes(data[i * 8..i * 8 + 8].try_into().unwrap());
    let (kind, trace, step, n) = (
        word(0),
        word(1) as usize,
        word(2) as usize,
        word(3) as usize,
    );
    let values = data[32..32 + n * 8]
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let text = String::from_utf8_lossy(&data[32 + n * 8..]).into_owned();
    (kind, trace, step, values, text)
}

/// A finished trace's record as one list of values: each probe's components' series, then
/// each flux monitor's power, then its incident intensity when there is one.
fn flatten(r: &TraceRecord) -> Vec<f64> {
    let mut out = Vec::new();
    for p in &r.probes {
        for c in p {
            out.extend_from_slice(c);
        }
    }
    for p in &r.power {
        out.extend_from_slice(p);
    }
    for i in r.incident.iter().flatten() {
        out.extend_from_slice(i);
    }
    out
}

/// The record [`flatten`] made of a trace of `model`, or None if the values do not fit its
/// monitors.
fn unflatten(model: &Model, values: &[f64]) -> Option<TraceRecord> {
    let steps = model.grid.steps;
    let mut at = 0;
    let mut take = |n: usize| {
        let part = values.get(at..at + n)?.to_vec();
        at += n;
        Some(part)
    };
    let mut record = TraceRecord::default();
    for p in &model.probes {
        let series: Option<Vec<Vec<f64>>> = p.components.iter().map(|_| take(steps)).collect();
        record.probes.push(series?);
    }
    for f in &model.fluxes {
        record.power.push(take(f.frequencies.len())?);
    }
    for f in &model.fluxes {
        record.incident.push(match model.tfsf {
            Some(_) => Some(take(f.frequencies.len())?),
            None => None,
        });
    }
    (at == values.len()).then_some(record)
}

/// A trace's ending as the message a rank sends to rank 0 (None: stopped, nothing to say).
fn message_of(k: usize, end: &TraceEnd) -> Option<Vec<u8>> {
    Some(match end {
        TraceEnd::Done(record, ..) => encode(kind::DONE, k, 0, &flatten(record), ""),
        TraceEnd::Stopped => return None,
        TraceEnd::NonFinite(step) => encode(kind::NON_FINITE, k, *step, &[], ""),
        TraceEnd::Device(step, text) => encode(kind::DEVICE, k, *step, &[], text),
        TraceEnd::Start(e) => encode(kind::START, k, 0, &[], &e.to_string()),
    })
}

/// The ending a message from rank `from` stands for (None: not a trace's ending).
fn end_of(
    model: &Model,
    from: usize,
    kind: u64,
    step: usize,
    values: &[f64],
    text: String,
) -> Option<TraceEnd> {
    Some(match kind {
        kind::DONE => match unflatten(model, values) {
            Some(r) => TraceEnd::Done(Box::new(r), Box::default(), None),
            None => TraceEnd::Start(StartError::Refused(format!(
                "rank {from} sent a trace of {} values, which does not fit the scan's monitors",
                values.len()
            ))),
        },
        kind::NON_FINITE => TraceEnd::NonFinite(step),
        kind::DEVICE => TraceEnd::Device(step, format!("on rank {from}: {text}")),
        kind::START => TraceEnd::Start(StartError::Refused(format!("rank {from}: {text}"))),
        _ => return None,
    })
}

/// Run every trace of `model`'s `[scan]` over the ranks `ranks`, rank 0 writing
/// `opts.output`: [`super::run`] for a model with a scan under `mpirun -n R`, R > 1.
pub(super) fn run_scan_over_ranks(
    model: &Model,
    opts: &RunOptions,
    obs: &mut dyn Observer,
    ranks: Ranks,
) -> Result<Summary, RunError> {
    let scan = model
        .scan
        .as_ref()
        .expect("run_scan_over_ranks runs a model with a [scan]");
    let world = World::get().expect("MPI runs when there are several ranks");
    let hosts = crate::ranks::hosts();
    // The cores of a host are shared by its ranks: each rank runs that many traces at once.
    let parallel = opts.threads.unwrap_or_else(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        (cores / crate::ranks::ranks_on_host(&hosts, ranks.rank)).max(1)
    });
    // Every rank must be able to run one trace per worker (the plan of its own host); the
    // answer is agreed, since hosts may differ.
    let why_not = one_per_worker_refusal(model, opts, parallel);
    let all_can = world.all(why_not.is_none());
    if !all_can {
        let why = why_not.unwrap_or_else(|| {
            "another rank cannot run one trace per worker (its host's plan says why)".into()
        });
        return Err(RunError::Backend(StartError::Refused(format!(
            "a [scan] over MPI ranks runs one trace per worker thread on every rank, and here it cannot: {why}; run it as one process"
        ))));
    }
    // Rank 0 opens the file (new, or reopened to resume) and tells every rank where the
    // scan starts; a failure there stops every rank.
    let mut status = [0u64; 2];
    let mut resumed: Resumed = None;
    let mut opened = Err(None);
    if ranks.is_root() {
        opened = open(model, opts);
        // The exit code the others stop with if it failed: 2 for a refused resume (bad input),
        // 1 for an output that cannot be written, as rank 0's own.
        status = match &opened {
            Ok((_, first)) => [0, *first as u64],
            Err(Some(RunError::Resume(_))) => [2, 0],
            Err(_) => [1, 0],
        };
    }
    world.broadcast(&mut status);
    if ranks.is_root() {
        match opened {
            Ok(r) => resumed = Some(r),
            Err(e) => return Err(e.expect("rank 0 says why the file did not open")),
        }
    } else if status[0] != 0 {
        return Err(RunError::OtherRank(status[0] as u8));
    }
    let first = status[1] as usize;
    let mine: Vec<usize> = (first..scan.traces)
        .skip(ranks.rank)
        .step_by(ranks.size)
        .collect();
    let line = format!(
        "rank {} on {}: traces {} of {} ({} at a time)",
        ranks.rank,
        hosts[ranks.rank],
        mine.len(),
        scan.traces - first,
        parallel
    );
    let lines = world.gather_strings(&line);
    let counts = world.gather_strings(&parallel.to_string());
    let at_once: usize = counts.iter().filter_map(|c| c.parse::<usize>().ok()).sum();
    match model.precision {
        Precision::F32 => farm::<f32>(
            model,
            scan,
            opts,
            obs,
            &world,
            ranks,
            (parallel, at_once),
            &mine,
            resumed,
            &lines,
        ),
        Precision::F64 => farm::<f64>(
            model,
            scan,
            opts,
            obs,
            &world,
            ranks,
            (parallel, at_once),
            &mine,
            resumed,
            &lines,
        ),
    }
}

/// Why this rank cannot run the scan one trace per worker with `parallel` workers (the plan of
/// its host), if so.
fn one_per_worker_refusal(model: &Model, opts: &RunOptions, parallel: usize) -> Option<String> {
    if opts.backend == crate::plan::BackendChoice::Cuda || opts.gpus.is_some() {
        return Some(
            "the traces of a scan over ranks run on the CPU (use --backend cpu or auto)".into(),
        );
    }
    if opts.slabs.is_some() {
        return Some("--slabs splits one trace's grid, which a scan over ranks does not".into());
    }
    let options = crate::plan::PlanOptions {
        backend: crate::plan::BackendChoice::Cpu,
        slabs: None,
        threads: Some(parallel),
        price_per_gpu_hour: None,
        gpus: None,
        slabs_per_gpu: None,
        exclude_gpus: Vec::new(),
    };
    let hardware = crate::plan::Hardware::detect(None, None);
    let plan = crate::plan::plan(model, &hardware, &options);
    let schedule = plan.scan?;
    // One worker is one trace at a time on one thread: what "one after another" on one slab
    // is, bit for bit.
    let fits = schedule.schedule == ScanSchedule::TracePerWorker
        || (parallel == 1 && plan.backend == crate::plan::PlanBackend::Cpu);
    (!fits).then_some(schedule.reason)
}

/// Rank 0's result file: created, or reopened with the traces already in it (resuming).
fn open(model: &Model, opts: &RunOptions) -> Result<(ScanWriter, usize), Option<RunError>> {
    if opts.resume {
        return ScanWriter::reopen(&opts.output, model)
            .map_err(|e| Some(RunError::Resume(e.to_string())));
    }
    let created = match model.precision {
        Precision::F32 => ScanWriter::create::<f32>(&opts.output, model, "cpu"),
        Precision::F64 => ScanWriter::create::<f64>(&opts.output, model, "cpu"),
    };
    created.map(|w| (w, 0)).map_err(|error| {
        Some(RunError::Output {
            error,
            summary: None,
        })
    })
}

/// Run this rank's traces `mine` on `parallel` workers; rank 0 also collects every rank's and
/// writes them, the others send theirs to it.
#[allow(clippy::too_many_arguments)]
fn farm<T: Real>(
    model: &Model,
    scan: &Scan,
    opts: &RunOptions,
    obs: &mut dyn Observer,
    world: &World,
    ranks: Ranks,
    (parallel, at_once): (usize, usize),
    mine: &[usize],
    resumed: Resumed,
    lines: &[String],
) -> Result<Summary, RunError>
where
    CpuBackend<T>: Backend<Real = T>,
{
    let next = AtomicUsize::new(0);
    let abort = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, TraceEnd)>();
    let work = Workers {
        model,
        scan,
        opts,
        traces: mine,
        next: &next,
        abort: &abort,
        gpus: &[],
    };
    if !ranks.is_root() {
        let started = Instant::now();
        std::thread::scope(|s| {
            work.spawn::<T>(s, parallel, tx);
            follow(world, opts, &abort, &rx);
        });
        let summary = Summary {
            backend: "cpu".into(),
            cells: model.grid.cells(),
            steps_done: 0,
            steps: scan.traces * model.grid.steps,
            wall: started.elapsed(),
            mcells_per_s: 0.0,
            phases: Default::default(),
            device: None,
            output: opts.output.clone(),
            complete: true,
            sidecar_warning: None,
            first_step: 0,
            checkpoints: 0,
            checkpoint: None,
        };
        Quiet.finish(&summary);
        return Ok(summary);
    }
    let (writer, first) = resumed.expect("rank 0 holds the file");
    for l in lines {
        obs.message(l);
    }
    let mut collector = Collector::new(model, scan, opts, first);
    collector.writer = Some(writer);
    let whole = vec![SlabRange {
        x0: 0,
        x1: model.grid.shape[0],
    }];
    obs.start_scan(
        &start_info(model, "cpu".into(), whole, at_once, Default::default()),
        &ScanInfo {
            traces: scan.traces,
            first,
            at_once,
            schedule: format!("one trace per worker on {} ranks", ranks.size),
        },
    );
    std::thread::scope(|s| {
        work.spawn::<T>(s, parallel, tx);
        collect::<T>(
            model,
            world,
            ranks.size,
            opts,
            &abort,
            &rx,
            &mut collector,
            obs,
        );
    });
    collector.end("cpu", (parallel, at_once), obs)
}

/// Rank 0's loop: take its own workers' traces and every other rank's as they come, abort every
/// rank on the first failure or stop, and end once every rank has finished.
#[allow(clippy::too_many_arguments)]
fn collect<T: Real>(
    model: &Model,
    world: &World,
    size: usize,
    opts: &RunOptions,
    abort: &AtomicBool,
    rx: &mpsc::Receiver<(usize, TraceEnd)>,
    collector: &mut Collector,
    obs: &mut dyn Observer,
) {
    let mut finished = vec![false; size];
    let mut aborted = false;
    let abort_all = |aborted: &mut bool, finished: &[bool]| {
        abort.store(true, Ordering::SeqCst);
        if !*aborted {
            *aborted = true;
            for r in (1..size).filter(|&r| !finished[r]) {
                world.post(r, SCAN_TAG, &encode(kind::ABORT, 0, 0, &[], ""));
            }
        }
    };
    loop {
        let mut idle = true;
        match rx.try_recv() {
            Ok((k, end)) => {
                idle = false;
                if !collector.take::<T>(k, end, obs) {
                    abort_all(&mut aborted, &finished);
                }
            }
            Err(mpsc::TryRecvError::Empty) => {}
            Err(mpsc::TryRecvError::Disconnected) => finished[0] = true,
        }
        while let Some((from, data)) = world.take_waiting(SCAN_TAG) {
            idle = false;
            let (what, k, step, values, text) = decode(&data);
            if what == kind::FINISHED {
                finished[from] = true;
                if step == 1 {
                    // That rank was signalled: the scan stops as if this one had been.
                    opts.stop.store(true, Ordering::SeqCst);
                }
            } else if let Some(end) = end_of(model, from, what, step, &values, text) {
                if !collector.take::<T>(k, end, obs) {
                    abort_all(&mut aborted, &finished);
                }
            }
        }
        if opts.stop.load(Ordering::SeqCst) && !aborted {
            abort_all(&mut aborted, &finished);
        }
        if finished.iter().all(|&f| f) {
            break;
        }
        if idle {
            std::thread::sleep(POLL);
        }
    }
    for r in 1..size {
        world.post(r, SCAN_TAG, &encode(kind::END, 0, 0, &[], ""));
    }
}

/// Another rank's loop: send each of its workers' traces to rank 0, heed rank 0's abort, say
/// when its workers have all ended, and wait for rank 0's end of the scan.
fn follow(
    world: &World,
    opts: &RunOptions,
    abort: &AtomicBool,
    rx: &mpsc::Receiver<(usize, TraceEnd)>,
) {
    let mut workers_done = false;
    loop {
        if !workers_done {
            match rx.recv_timeout(POLL) {
                Ok((k, end)) => {
                    if let Some(m) = message_of(k, &end) {
                        world.post(0, SCAN_TAG, &m);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    workers_done = true;
                    let stopped = opts.stop.load(Ordering::SeqCst);
                    world.post(
                        0,
                        SCAN_TAG,
                        &encode(kind::FINISHED, 0, stopped as usize, &[], ""),
                    );
                }
            }
        } else {
            std::thread::sleep(POLL);
        }
        while let Some((_, data)) = world.take_waiting(SCAN_TAG) {
            match decode(&data).0 {
                kind::ABORT => abort.store(true, Ordering::SeqCst),
                kind::END => return,
                _ => {}
            }
        }
    }
}

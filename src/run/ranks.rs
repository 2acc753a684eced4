//! A run over several MPI ranks (`mpirun -n R yee run`): the plan's rank split, each rank's
//! CPU engine on its own slabs, rank 0 running the shared loop ([`super::run_backend`]) on the
//! backend that stands for the whole grid, the others following it
//! ([`crate::ranks::driver`]).
//!
//! Rank 0 alone writes the file, with the layout of one process; the other ranks return a
//! summary of their part and exit 0, so the run's exit status is rank 0's (mpirun reports
//! it). Only the CPU engine runs over ranks for now. Checkpoints are written part by part
//! (each rank's part through rank 0 into the one checkpoint file, with the single-process
//! layout) and resumed on any number of ranks, each reading its own part.

use super::{Observer, Quiet, RunError, RunOptions, StartError, Summary};
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::model::{Model, Precision};
use crate::ranks::driver::{follow, Outcome, RankBackend};
use crate::ranks::RankLayout;
use crate::ranks::Ranks;
use std::time::Instant;

/// Run `model` over the ranks of the world (`ranks.size > 1`), as [`super::run`] does for one
/// process.
pub(super) fn run_ranks(
    model: &Model,
    opts: &RunOptions,
    obs: &mut dyn Observer,
    ranks: Ranks,
) -> Result<Summary, RunError> {
    let hosts = crate::ranks::hosts();
    if let Some(why) = refusal(opts) {
        return Err(RunError::Backend(StartError::Refused(why)));
    }
    // The worker threads of a host are shared by the ranks on it.
    let threads = opts.threads.unwrap_or_else(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        (cores / crate::ranks::ranks_on_host(&hosts, ranks.rank)).max(1)
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .start_handler(|_| crate::fpu::flush_subnormals_to_zero())
        .build()
        .map_err(|source| RunError::Backend(StartError::Threads { threads, source }))?;
    let nx = model.grid.shape[0];
    let (slabs, groups) = crate::plan::ranks::rank_split(nx, ranks.size, threads, opts.slabs);
    if groups.len() < ranks.size {
        return Err(RunError::Backend(StartError::Refused(format!(
            "{} ranks for a grid of {nx} x planes: at most {nx} ranks can share it",
            ranks.size
        ))));
    }
    let layout = RankLayout {
        slabs,
        ranks: groups,
        rank: ranks.rank,
    };
    // The flux DFTs are kept on rank 0 over whole planes, fed from every rank's part: the
    // local engines hold none.
    let mut local_model = model.clone();
    local_model.fluxes.clear();
    let local_ranges = layout.local_ranges();
    let started = Instant::now();
    match model.precision {
        Precision::F32 => {
            let local = pool.install(|| CpuBackend::<f32>::new(&local_model, &local_ranges));
            pool.install(|| go(model, local, layout, &hosts, threads, opts, obs, started))
        }
        Precision::F64 => {
            let local = pool.install(|| CpuBackend::<f64>::new(&local_model, &local_ranges));
            pool.install(|| go(model, local, layout, &hosts, threads, opts, obs, started))
        }
    }
}

/// Why this run cannot go over ranks (the same answer on every rank), if so.
fn refusal(opts: &RunOptions) -> Option<String> {
    if opts.backend == crate::plan::BackendChoice::Cuda || opts.gpus.is_some() {
        return Some(
            "the CUDA engine does not run over several MPI ranks yet: use --backend cpu (or auto)"
                .into(),
        );
    }
    None
}

/// Rank 0: the loop on the whole-grid backend; the others: follow it.
#[allow(clippy::too_many_arguments)]
fn go<B: Backend>(
    model: &Model,
    local: B,
    layout: RankLayout,
    hosts: &[String],
    threads: usize,
    opts: &RunOptions,
    obs: &mut dyn Observer,
    started: Instant,
) -> Result<Summary, RunError> {
    // MPI is called from this thread only (one of the pool's: MPI runs serialized).
    let world = crate::ranks::World::get().expect("MPI runs when there are several ranks");
    // Say which rank runs where and what it holds (rank 0 prints every rank's line).
    let me = layout.rank;
    let planes = layout.planes(me);
    let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let line = format!(
        "rank {me} on {}: x planes [{}, {}) in {}, {}, {} bytes allocated",
        hosts[me],
        planes.start,
        planes.end,
        count(layout.ranks[me].len(), "slab"),
        count(threads, "thread"),
        local.allocation().total()
    );
    let lines = world.gather_strings(&line);
    let ranges = layout.slabs.clone();
    if me == 0 {
        for l in &lines {
            obs.message(l);
        }
        let mut backend = RankBackend::new(model, local, layout, world, opts.stop.clone());
        let result = super::run_backend(model, &mut backend, &ranges, threads, opts, obs);
        let (outcome, steps) = match &result {
            Ok(s) => (Outcome::Complete, s.steps_done),
            Err(_) => (Outcome::Stopped, 0),
        };
        backend.finish(outcome, steps);
        result
    } else {
        // Resuming, every rank reads its own part of the checkpoint (rank 0 says when).
        let path = opts.checkpoint_path();
        let read = |request: Option<&crate::backend::StateRequest>| {
            crate::checkpoint::read_part::<B::Real>(&path, model, request)
                .map_err(|e| e.to_string())
        };
        let (outcome, steps_done) = follow(model, local, layout, world, opts.stop.clone(), &read);
        let wall = started.elapsed();
        let summary = Summary {
            backend: "cpu".into(),
            cells: model.grid.cells(),
            steps_done,
            steps: model.grid.steps,
            wall,
            mcells_per_s: 0.0,
            phases: Default::default(),
            output: opts.output.clone(),
            complete: outcome == Outcome::Complete,
            sidecar_warning: None,
            first_step: 0,
            checkpoints: 0,
            checkpoint: None,
        };
        Quiet.finish(&summary);
        Ok(summary)
    }
}

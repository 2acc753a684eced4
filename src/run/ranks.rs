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
use crate::backend::bloch::BlochPair;
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
        (super::all_cores() / crate::ranks::ranks_on_host(&hosts, ranks.rank)).max(1)
    });
    let pool = super::worker_pool(threads).map_err(RunError::Backend)?;
    let nx = model.grid.shape[0];
    // On the CPU each rank splits its planes as one process of `threads` threads would; on
    // a GPU into `--slabs-per-gpu` slabs (one by default), as one process on one GPU.
    let cuda = opts.backend == crate::plan::BackendChoice::Cuda;
    let (per_rank, total) = if cuda {
        let spg = opts.slabs_per_gpu.unwrap_or(1).max(1);
        (1, Some(spg * ranks.size))
    } else {
        (threads, opts.slabs)
    };
    let (slabs, groups) = crate::plan::ranks::rank_split(nx, ranks.size, per_rank, total);
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
    // The rank's backend holds its own part of the monitors (flux DFTs: none, rank 0 keeps
    // them over whole planes fed from every rank's part).
    let local_model = layout.local_model(model);
    let local_ranges = layout.local_ranges();
    let started = Instant::now();
    if cuda {
        // The engine stays on this thread (a CUDA engine is not Send), which drives it and
        // calls MPI. Ranks on one host share out its GPUs: the k-th rank there takes GPU k (mod count),
        // or the k-th of `--gpus`.
        let local_index = hosts[..ranks.rank]
            .iter()
            .filter(|h| **h == hosts[ranks.rank])
            .count();
        let halos = crate::ranks::Exchange::process_halos(&layout.exchanges(&model.boundaries));
        let part = CudaPart {
            model: &local_model,
            ranges: &local_ranges,
            halos,
            local_index,
            gpus: opts.gpus.as_deref(),
        };
        return match (model.precision, model.boundaries.has_bloch()) {
            (Precision::F32, false) => {
                let local = agree_on_engine(part.start::<f32>(), &hosts)?;
                go(model, local, layout, &hosts, threads, opts, obs, started)
            }
            (Precision::F64, false) => {
                let local = agree_on_engine(part.start::<f64>(), &hosts)?;
                go(model, local, layout, &hosts, threads, opts, obs, started)
            }
            (Precision::F32, true) => {
                let local = agree_on_engine(part.start_pair::<f32>(), &hosts)?;
                go(model, local, layout, &hosts, threads, opts, obs, started)
            }
            (Precision::F64, true) => {
                let local = agree_on_engine(part.start_pair::<f64>(), &hosts)?;
                go(model, local, layout, &hosts, threads, opts, obs, started)
            }
        };
    }
    let on = count(threads, "thread");
    // The rank's engine is built on the pool (a Bloch cell's: the pair of its part's two
    // field sets), then the run goes on there.
    macro_rules! on_pool {
        ($engine:expr) => {{
            let local = pool.install(|| $engine);
            pool.install(|| {
                go(
                    model,
                    (local, on),
                    layout,
                    &hosts,
                    threads,
                    opts,
                    obs,
                    started,
                )
            })
        }};
    }
    let (m, r) = (&local_model, &local_ranges[..]);
    match (model.precision, model.boundaries.has_bloch()) {
        (Precision::F32, false) => on_pool!(CpuBackend::<f32>::new(m, r)),
        (Precision::F64, false) => on_pool!(CpuBackend::<f64>::new(m, r)),
        (Precision::F32, true) => on_pool!(super::start::cpu_pair::<f32>(m, r)),
        (Precision::F64, true) => on_pool!(super::start::cpu_pair::<f64>(m, r)),
    }
}

/// `n what`, plural when n is not 1.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// What one rank's CUDA engine is built from.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
struct CudaPart<'a> {
    /// The rank's local model.
    model: &'a Model,
    /// Its slabs.
    ranges: &'a [crate::decomp::SlabRange],
    halos: crate::decomp::ProcessHalos,
    /// Its index among the ranks on its host.
    local_index: usize,
    /// `--gpus`: the ordinals the ranks of a host take in turn.
    gpus: Option<&'a [usize]>,
}

#[cfg(feature = "cuda")]
impl CudaPart<'_> {
    /// The engine on this rank's GPU and the GPU in words, or why it cannot start (naming
    /// the GPU).
    fn start<T: crate::real::Real>(
        self,
    ) -> Result<(crate::backend::cuda::CudaBackend<T>, String), String> {
        let ordinal = self.ordinal()?;
        let mut engine = self.engine(self.model, ordinal)?;
        // Test hook (scripts/gpu-check.sh): a GPU that fails mid-run.
        if let Some(step) =
            crate::fault::hook("YEE_CUDA_FAIL_AT_STEP").and_then(|v| v.trim().parse::<usize>().ok())
        {
            engine.fail_at_step(step);
        }
        Ok((engine, format!("GPU {ordinal}")))
    }

    /// A Bloch cell's pair of engines on this rank's GPU (the real and the imaginary field
    /// set of its part, [`BlochPair`]), as [`Self::start`].
    fn start_pair<T: crate::real::Real>(
        self,
    ) -> Result<(BlochPair<crate::backend::cuda::CudaBackend<T>>, String), String> {
        let ordinal = self.ordinal()?;
        let re = self.engine(self.model, ordinal)?;
        let im = self.engine(&self.model.imaginary_set(), ordinal)?;
        Ok((BlochPair::new(self.model, re, im), format!("GPU {ordinal}")))
    }

    /// The GPU this rank takes, or why CUDA cannot be used.
    fn ordinal(&self) -> Result<usize, String> {
        use crate::backend::cuda::probe_gpus;
        // Probing first: it finds out, without a panic, whether the driver library loads.
        let found = probe_gpus().map_err(|e| format!("CUDA cannot be used: {e}"))?;
        if found.is_empty() {
            return Err("CUDA cannot be used: no GPU found".into());
        }
        Ok(match self.gpus {
            Some(list) if !list.is_empty() => list[self.local_index % list.len()],
            _ => found[self.local_index % found.len()].ordinal,
        })
    }

    /// An engine of `model` (the rank's part, or its imaginary set) on GPU `ordinal`.
    fn engine<T: crate::real::Real>(
        &self,
        model: &Model,
        ordinal: usize,
    ) -> Result<crate::backend::cuda::CudaBackend<T>, String> {
        use crate::backend::cuda::{CudaDevice, CudaEngine, EngineOptions};
        let dev =
            CudaDevice::new(&[ordinal], T::PRECISION).map_err(|e| format!("GPU {ordinal}: {e}"))?;
        let gpu_of = vec![0; self.ranges.len()];
        CudaEngine::for_process(
            dev,
            model,
            self.ranges,
            &gpu_of,
            EngineOptions::default(),
            "cuda",
            self.halos.clone(),
        )
        .map_err(|e| format!("GPU {ordinal}: {e}"))
    }
}

/// Without the `cuda` feature there is no CUDA engine.
#[cfg(not(feature = "cuda"))]
impl CudaPart<'_> {
    fn start<T: crate::real::Real>(self) -> Result<(CpuBackend<T>, String), String> {
        Err(Self::not_built())
    }

    fn start_pair<T: crate::real::Real>(
        self,
    ) -> Result<(BlochPair<CpuBackend<T>>, String), String> {
        Err(Self::not_built())
    }

    fn not_built() -> String {
        "this yee was built without the CUDA backend (feature `cuda`)".into()
    }
}

/// Every rank learns whether every rank's engine started: a rank whose engine failed stops
/// with its own message (printed with its rank), the others with exit 1 and nothing printed,
/// so no rank waits in the run's first collective call for one that is gone.
fn agree_on_engine<B>(built: Result<B, String>, hosts: &[String]) -> Result<B, RunError> {
    let world = crate::ranks::World::get().expect("MPI runs when there are several ranks");
    let all = world.all(built.is_ok());
    match built {
        Err(why) => Err(RunError::Backend(StartError::RankEngine {
            rank: world.rank(),
            host: hosts[world.rank()].clone(),
            why,
        })),
        Ok(_) if !all => Err(RunError::OtherRank(1)),
        Ok(engine) => Ok(engine),
    }
}

/// Why this run cannot go over ranks (the same answer on every rank), if so.
fn refusal(opts: &RunOptions) -> Option<String> {
    if opts.backend == crate::plan::BackendChoice::Cuda && opts.slabs.is_some() {
        return Some(
            "--slabs splits the CPU's share: over ranks on GPUs use --slabs-per-gpu".into(),
        );
    }
    None
}

/// Rank 0: the loop on the whole-grid backend; the others: follow it.
#[allow(clippy::too_many_arguments)]
fn go<B: Backend>(
    model: &Model,
    local: (B, String),
    layout: RankLayout,
    hosts: &[String],
    threads: usize,
    opts: &RunOptions,
    obs: &mut dyn Observer,
    started: Instant,
) -> Result<Summary, RunError> {
    // MPI is called from this thread only (one of the pool's on the CPU: MPI runs serialized).
    let (mut local, on) = local;
    // The surface ports of a rank's planes trade with the ranks beside it. Every rank runs
    // the same engine on the same model, so all link or all refuse.
    if !model.surface_ports().is_empty() {
        let links = || -> Box<dyn crate::backend::ports::PortLinks<B::Real>> {
            Box::new(crate::ranks::MpiPortLinks::new(layout.clone()))
        };
        local
            .link_ports(&links)
            .map_err(|why| RunError::Backend(StartError::Refused(why)))?;
    }
    let world = crate::ranks::World::get().expect("MPI runs when there are several ranks");
    // Say which rank runs where and what it holds (rank 0 prints every rank's line).
    let me = layout.rank;
    let planes = layout.planes(me);
    let line = format!(
        "rank {me} on {}: x planes [{}, {}) in {}, {}, {} bytes allocated",
        hosts[me],
        planes.start,
        planes.end,
        count(layout.ranks[me].len(), "slab"),
        on,
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
        let local_name = local.name();
        let (outcome, steps_done) = follow(model, local, layout, world, opts.stop.clone(), &read);
        let wall = started.elapsed();
        let summary = Summary {
            backend: local_name,
            cells: model.grid.cells(),
            steps_done,
            steps: model.grid.steps,
            wall,
            mcells_per_s: 0.0,
            phases: Default::default(),
            device: None,
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

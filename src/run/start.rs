//! Building the engine a run steps from the plan, the one decider: the CUDA engine on the
//! plan's placement, or the CPU engine on the plan's slabs. When the CUDA engine runs out of
//! memory on a GPU, the run is planned again without that GPU ([`crate::plan::replan`]), on
//! the remaining GPUs or, under `auto`, on the CPU with its own slab split and a fresh
//! host-memory check, before any output is written.

use super::{Observer, StartError};
use crate::backend::bloch::BlochPair;
use crate::backend::cpu::CpuBackend;
use crate::backend::cuda::placement::Placement;
use crate::backend::cuda::CudaError;
use crate::backend::Engine;
use crate::decomp::SlabRange;
use crate::model::{Model, Precision};
use crate::plan::{
    BackendChoice, Decision, Hardware, NoGpu, Plan, PlanBackend, PlanOptions, StartFailure,
};

/// Where following a plan ended ([`follow_plan`]).
#[derive(Debug)]
pub enum Started<E> {
    /// The GPU engine started on this plan's placement.
    Gpus(E, Plan),
    /// This plan runs on the CPU: the first plan, or a re-plan after the GPUs failed.
    Cpu(Plan),
}

/// Follow `plan` (made for `model` on `hardware` under `options`) until an engine starts.
///
/// A CUDA plan is started with `start_gpus`. When that runs out of memory, the GPU it names
/// (an index among the GPUs the engine was built on, in order of first use by the plan's
/// slabs) is mapped back to the plan's device and the run is planned again without it; every
/// GPU that failed stays out of later plans. Any other CUDA failure leaves every GPU out under
/// `auto` and is the error under `--backend cuda`. Each new plan's reason goes to
/// `obs.message`. A CPU plan is returned for the caller to build; a plan that fits nowhere is
/// the error, in the words of its decision (under `--backend cuda` without a usable GPU:
/// "CUDA cannot be used: ..."; out of GPU memory with no GPU left: what ran out).
pub fn follow_plan<E>(
    model: &Model,
    hardware: &Hardware,
    options: &PlanOptions,
    plan: Plan,
    mut start_gpus: impl FnMut(&Plan) -> Result<E, CudaError>,
    obs: &mut dyn Observer,
) -> Result<Started<E>, StartError> {
    let mut options = options.clone();
    let mut plan = plan;
    let mut out_of_memory = None;
    loop {
        match plan.backend {
            PlanBackend::Cpu => return Ok(Started::Cpu(plan)),
            PlanBackend::None => return Err(refusal(&plan, &options, out_of_memory)),
            PlanBackend::Cuda => {}
        }
        let failure = match start_gpus(&plan) {
            Ok(engine) => return Ok(Started::Gpus(engine, plan)),
            Err(CudaError::OutOfMemory(oom)) => {
                let (devices, _) = Placement::of(&plan).devices();
                match devices.get(oom.gpu) {
                    Some(&d) => {
                        let oom = oom.on(d);
                        obs.message(&format!("{oom}; planning again without GPU {d}"));
                        out_of_memory = Some(oom.to_string());
                        StartFailure::OutOfMemory(d)
                    }
                    // An engine names only GPUs it was given; should one not, no GPU is
                    // trusted rather than the wrong one left out.
                    None => {
                        out_of_memory = Some(oom.to_string());
                        StartFailure::CudaUnavailable
                    }
                }
            }
            Err(e) if options.backend == BackendChoice::Cuda => return Err(StartError::Cuda(e)),
            Err(e) => {
                obs.message(&format!(
                    "CUDA could not start ({e}); planning again without the GPUs"
                ));
                StartFailure::CudaUnavailable
            }
        };
        plan = crate::plan::replan(model, hardware, &options, failure);
        failure.leave_out(&mut options, hardware);
        obs.message(&plan.reason);
    }
}

/// Why `plan`, which fits nowhere, cannot run, from its decision.
fn refusal(plan: &Plan, options: &PlanOptions, out_of_memory: Option<String>) -> StartError {
    if options.backend == BackendChoice::Cuda {
        if let Some(m) = out_of_memory {
            return StartError::GpuMemory(m);
        }
        if let Decision::CudaRequestedNoGpu {
            why: NoGpu::NoneFound { note },
        } = &plan.decision
        {
            // The hardware's note says why the driver found nothing ("no GPU found: <why>").
            let why = note.strip_prefix("no GPU found: ").unwrap_or(note);
            return StartError::Refused(format!("CUDA cannot be used: {why}"));
        }
    }
    StartError::DoesNotFit {
        reason: plan.reason.clone(),
        suggestions: plan.suggestions.clone(),
    }
}

/// The engine for `model` and its slab ranges, as `plan` (made on `hardware` under `options`)
/// decides: CUDA on the plan's placement, re-planned as [`follow_plan`] does when that fails,
/// or the CPU engine on the plan's slabs, built on `pool`. `yee run` and `yee bench` both
/// build their engine here.
pub fn start_engine(
    model: &Model,
    hardware: &Hardware,
    options: &PlanOptions,
    plan: &Plan,
    pool: &rayon::ThreadPool,
    obs: &mut dyn Observer,
) -> Result<(Engine, Vec<SlabRange>), StartError> {
    let started = follow_plan(
        model,
        hardware,
        options,
        plan.clone(),
        |p| cuda_on(model, &Placement::of(p)),
        obs,
    )?;
    match started {
        Started::Gpus(engine, plan) => Ok((engine, plan.ranges())),
        Started::Cpu(plan) => {
            let ranges = plan.ranges();
            // The CPU engine (Send, unlike a CUDA one) is built on the pool, then wrapped.
            let engine = cpu_engine(model, &ranges, pool);
            Ok((engine, ranges))
        }
    }
}

/// The CPU engine of `model` split as `ranges`, in the model's precision: a pair of engines
/// where the model has a Bloch phase ([`BlochPair`]), else one; built on `pool` (the CPU
/// engine is Send, unlike a CUDA one, so each arm builds there and wraps after).
pub fn cpu_engine(model: &Model, ranges: &[SlabRange], pool: &rayon::ThreadPool) -> Engine {
    match (model.precision, model.boundaries.has_bloch()) {
        (Precision::F32, false) => Engine::CpuF32(pool.install(|| CpuBackend::new(model, ranges))),
        (Precision::F64, false) => Engine::CpuF64(pool.install(|| CpuBackend::new(model, ranges))),
        (Precision::F32, true) => Engine::BlochCpuF32(pool.install(|| cpu_pair(model, ranges))),
        (Precision::F64, true) => Engine::BlochCpuF64(pool.install(|| cpu_pair(model, ranges))),
    }
}

/// A Bloch cell's pair of CPU engines of `model` split as `ranges`: the real set and the
/// imaginary one ([`Model::imaginary_set`]).
pub(crate) fn cpu_pair<T: crate::real::Real>(
    model: &Model,
    ranges: &[SlabRange],
) -> BlochPair<CpuBackend<T>> {
    let re = CpuBackend::new(model, ranges);
    let im = CpuBackend::new(&model.imaginary_set(), ranges);
    BlochPair::new(model, re, im)
}

/// The CUDA engine of `model` on `placement`, in the model's precision.
#[cfg(feature = "cuda")]
pub(super) fn cuda_on(model: &Model, placement: &Placement) -> Result<Engine, CudaError> {
    use crate::backend::cuda::placement::new_backend;
    use crate::backend::cuda::EngineOptions;
    let opts = EngineOptions::default();
    // A Bloch cell's imaginary set is a second engine of the same split, beside the first.
    let imaginary = || model.imaginary_set();
    let mut engine = match (model.precision, model.boundaries.has_bloch()) {
        (Precision::F32, false) => Engine::CudaF32(new_backend(model, placement, opts)?),
        (Precision::F64, false) => Engine::CudaF64(new_backend(model, placement, opts)?),
        (Precision::F32, true) => Engine::BlochCudaF32(BlochPair::new(
            model,
            new_backend(model, placement, opts)?,
            new_backend(&imaginary(), placement, opts)?,
        )),
        (Precision::F64, true) => Engine::BlochCudaF64(BlochPair::new(
            model,
            new_backend(model, placement, opts)?,
            new_backend(&imaginary(), placement, opts)?,
        )),
    };
    // Test hook (scripts/gpu-check.sh, tests/cuda_backend.rs): a GPU that fails mid-run.
    if let Some(step) =
        crate::fault::hook("YEE_CUDA_FAIL_AT_STEP").and_then(|v| v.trim().parse::<usize>().ok())
    {
        match &mut engine {
            Engine::CudaF32(b) => b.fail_at_step(step),
            Engine::CudaF64(b) => b.fail_at_step(step),
            _ => {}
        }
    }
    Ok(engine)
}

/// Without the `cuda` feature there is no CUDA engine.
#[cfg(not(feature = "cuda"))]
pub(super) fn cuda_on(_: &Model, _: &Placement) -> Result<Engine, CudaError> {
    Err(CudaError::NotBuilt)
}

/// A rayon pool of `threads` worker threads that flush subnormals to zero (as every thread
/// that steps fields must: the bits then do not depend on the thread): the one way a run,
/// a scan's worker, a rank or the benchmark makes its pool.
pub fn worker_pool(threads: usize) -> Result<rayon::ThreadPool, StartError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .start_handler(|_| crate::fpu::flush_subnormals_to_zero())
        .build()
        .map_err(|source| StartError::Threads { threads, source })
}

/// One thread per core of this machine.
pub fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What a run on this process prepares before its engine: the worker threads (the user's, or
/// one per core), the hardware here, the plan's options from the run's and the plan.
pub struct Prepared {
    /// Worker threads of the CPU engine.
    pub threads: usize,
    /// The hardware the plan saw.
    pub hardware: crate::plan::Hardware,
    /// The plan's options.
    pub options: crate::plan::PlanOptions,
    /// The plan.
    pub plan: crate::plan::Plan,
}

impl Prepared {
    /// Detect the hardware and plan `model` with the options of `opts` (the run and a scan
    /// share this).
    pub fn of(model: &Model, opts: &super::RunOptions) -> Prepared {
        let threads = opts.threads.unwrap_or_else(all_cores);
        let options = crate::plan::PlanOptions {
            backend: opts.backend,
            slabs: opts.slabs,
            threads: Some(threads),
            price_per_gpu_hour: None,
            gpus: opts.gpus.clone(),
            slabs_per_gpu: opts.slabs_per_gpu,
            exclude_gpus: Vec::new(),
        };
        let hardware = crate::plan::Hardware::detect(None, None);
        let plan = crate::plan::plan(model, &hardware, &options);
        Prepared {
            threads,
            hardware,
            options,
            plan,
        }
    }
}

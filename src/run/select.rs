//! Building the engine a run steps: what the plan chose, or what `--backend`, `--gpus` and
//! `--slabs-per-gpu` ask for. Running out of GPU memory while allocating re-plans on one more
//! GPU, or falls back to the CPU under `auto`, before any output is written.

use super::{Observer, RunError, RunOptions, StartError};
use crate::backend::cpu::CpuBackend;
use crate::backend::cuda::select::{choose, Choice, Placement};
use crate::backend::cuda::{CudaError, GpuInfo};
use crate::backend::{BackendChoice, Engine};
use crate::decomp::SlabRange;
use crate::model::{Model, Precision};
use crate::plan::{Plan, PlanBackend};

/// The plan a run follows and what it was made from, so that a failed start can re-plan.
#[derive(Clone, Copy)]
pub(super) struct Planned<'a> {
    /// The hardware planned for.
    pub hardware: &'a crate::plan::Hardware,
    /// The options planned under.
    pub options: &'a crate::plan::PlanOptions,
    /// The plan.
    pub plan: &'a Plan,
}

/// The engine for `model` and its slab ranges. CUDA when asked for (`--backend cuda`) or when
/// the plan chose it (`auto`), else the CPU engine on the plan's slabs, built on `pool`. When
/// the plan chose CUDA and it did not start (`auto`), the run is planned again without the
/// GPUs, so the CPU gets its own slab split and a fresh host-memory check.
pub(super) fn build_engine(
    model: &Model,
    opts: &RunOptions,
    planned: Planned,
    pool: &rayon::ThreadPool,
    obs: &mut dyn Observer,
) -> Result<(Engine, Vec<SlabRange>), RunError> {
    if let Some(cuda) = cuda_engine(model, opts, planned.plan, obs) {
        return cuda;
    }
    let replanned;
    let plan = if planned.plan.backend == PlanBackend::Cuda {
        replanned = crate::plan::replan(
            model,
            planned.hardware,
            planned.options,
            crate::plan::StartFailure::CudaUnavailable,
        );
        obs.message(&replanned.reason);
        &replanned
    } else {
        planned.plan
    };
    if !plan.fits {
        return Err(RunError::Backend(StartError::DoesNotFit {
            reason: plan.reason.clone(),
            suggestions: plan.suggestions.clone(),
        }));
    }
    let ranges = plan.ranges();
    // The CPU engine (Send, unlike a CUDA one) is built on the pool, then wrapped.
    let engine = match model.precision {
        Precision::F32 => Engine::CpuF32(pool.install(|| CpuBackend::new(model, &ranges))),
        Precision::F64 => Engine::CpuF64(pool.install(|| CpuBackend::new(model, &ranges))),
    };
    Ok((engine, ranges))
}

/// The CUDA engine when asked for or planned; `None` means: run on the CPU. The plan's own
/// slabs are used (it models `--gpus` and `--slabs-per-gpu`).
fn cuda_engine(
    model: &Model,
    opts: &RunOptions,
    plan: &Plan,
    obs: &mut dyn Observer,
) -> Option<Result<(Engine, Vec<SlabRange>), RunError>> {
    let planned_cuda = plan.backend == PlanBackend::Cuda && plan.fits;
    match opts.backend {
        BackendChoice::Cpu => return None,
        BackendChoice::Auto if !planned_cuda => return None,
        _ => {}
    }
    let placement = planned_cuda.then(|| Placement {
        ranges: plan.ranges(),
        // The plan lists the probed GPUs first, in ordinal order.
        ordinals: plan.slabs.iter().map(|s| s.device).collect(),
    });
    try_cuda(model, opts, placement, obs)
}

/// The CUDA engine on `placement`, or else where [`choose`] says. `None` means: run on the
/// CPU (the reason has been passed to `obs.message` under `auto`).
fn try_cuda(
    model: &Model,
    opts: &RunOptions,
    placement: Option<Placement>,
    obs: &mut dyn Observer,
) -> Option<Result<(Engine, Vec<SlabRange>), RunError>> {
    let auto = opts.backend == BackendChoice::Auto;
    let spg = opts.slabs_per_gpu.unwrap_or(1).max(1);
    let mut placement = match placement {
        Some(p) => p,
        None => match choose(
            model,
            opts.backend,
            opts.gpus.as_deref(),
            opts.slabs_per_gpu,
        ) {
            Ok(Choice::Cpu(reason)) => {
                if auto {
                    obs.message(&format!("running on the CPU: {reason}"));
                }
                return None;
            }
            Ok(Choice::Cuda(gpus, reason)) => {
                if auto {
                    obs.message(&format!("running on CUDA: {reason}"));
                }
                Placement::over(model, &gpus, spg)
            }
            Err(why) => return Some(Err(RunError::Backend(StartError::Refused(why)))),
        },
    };
    loop {
        match cuda_on(model, &placement) {
            Ok(engine) => return Some(Ok((engine, placement.ranges))),
            Err(CudaError::OutOfMemory(m)) => {
                // Re-plan on one more GPU (never beyond those given with --gpus).
                let (used, _) = placement.devices();
                let all = crate::backend::cuda::probe_gpus().unwrap_or_default();
                let allowed =
                    |g: &GpuInfo| opts.gpus.as_ref().is_none_or(|l| l.contains(&g.ordinal));
                let next = all
                    .iter()
                    .filter(|g| !used.contains(&g.ordinal) && allowed(g))
                    .max_by_key(|g| g.memory_free);
                if let Some(next) = next {
                    let mut set: Vec<GpuInfo> = all
                        .iter()
                        .filter(|g| used.contains(&g.ordinal))
                        .cloned()
                        .collect();
                    set.push(next.clone());
                    obs.message(&format!(
                        "out of GPU memory on {} GPU(s) ({m}); re-planning on {}",
                        used.len(),
                        set.len()
                    ));
                    placement = Placement::over(model, &set, spg);
                    continue;
                }
                if auto {
                    obs.message(&format!(
                        "out of GPU memory ({m}); running on the CPU instead"
                    ));
                    return None;
                }
                return Some(Err(RunError::Backend(StartError::GpuMemory(m))));
            }
            Err(e) => {
                if auto {
                    obs.message(&format!(
                        "CUDA could not start ({e}); running on the CPU instead"
                    ));
                    return None;
                }
                return Some(Err(RunError::Backend(StartError::Cuda(e))));
            }
        }
    }
}

/// The CUDA engine of `model` on `placement`, in the model's precision.
#[cfg(feature = "cuda")]
fn cuda_on(model: &Model, placement: &Placement) -> Result<Engine, CudaError> {
    use crate::backend::cuda::select::new_backend;
    use crate::backend::cuda::EngineOptions;
    let opts = EngineOptions::default();
    let mut engine = match model.precision {
        Precision::F32 => Engine::CudaF32(new_backend(model, placement, opts)?),
        Precision::F64 => Engine::CudaF64(new_backend(model, placement, opts)?),
    };
    // Test hook (scripts/gpu-check.sh, tests/cuda_backend.rs): a GPU that fails mid-run.
    if let Some(step) = std::env::var("YEE_CUDA_FAIL_AT_STEP")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
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
fn cuda_on(_: &Model, _: &Placement) -> Result<Engine, CudaError> {
    Err(CudaError::NotBuilt)
}

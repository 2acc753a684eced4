//! Which engine a run uses, and running it on CUDA.
//!
//! [`choose`] is the one decision (`--backend auto|cpu|cuda`, `--gpus`, `--slabs-per-gpu`):
//! CUDA when the libraries load, a GPU is there and the grid fits in the free memory of the
//! fewest GPUs that hold it; else the CPU, with the reason in one sentence. It is kept small so
//! the memory planner's decision can replace it. [`try_run`] builds the CUDA engine and runs
//! the shared time loop on it; running out of GPU memory while allocating re-plans on more
//! GPUs, or falls back to the CPU under `auto`, before any output is written.

use super::engine::estimate;
use super::CudaError;
use crate::backend::Allocation;
use crate::decomp::SlabRange;
use crate::devices::GpuInfo;
use crate::model::Model;
use crate::run::{BackendChoice, Observer, RunError, RunOptions, Summary};

/// Device memory kept free on every GPU for the context, the kernel module and the driver:
/// the plan's figure.
pub use crate::plan::CUDA_CONTEXT_RESERVE as GPU_RESERVE;

/// The engine a run will use.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// The CPU, and why.
    Cpu(String),
    /// These GPUs (in slab order), and why.
    Cuda(Vec<GpuInfo>, String),
}

/// Slab ranges over `gpus`, `slabs_per_gpu` consecutive slabs on each, split by the plan's
/// [`crate::plan::gpu_split`] over each GPU's free memory less the context reserve; returns
/// the ranges and each slab's index into `gpus`.
pub fn layout(nx: usize, gpus: &[GpuInfo], slabs_per_gpu: usize) -> (Vec<SlabRange>, Vec<usize>) {
    let usable: Vec<u64> = gpus
        .iter()
        .map(|g| g.memory_free.saturating_sub(GPU_RESERVE))
        .collect();
    crate::plan::gpu_split(nx, &usable, slabs_per_gpu)
}

/// Bytes each GPU would hold for `model` over `gpus`: its slabs and their monitor buffers, as
/// the plan counts them ([`crate::plan::Layout::gpu_slab_bytes_with_monitors`]).
pub fn per_gpu_bytes(model: &Model, gpus: &[GpuInfo], slabs_per_gpu: usize) -> Vec<u64> {
    let (ranges, gpu_of) = layout(model.grid.shape[0], gpus, slabs_per_gpu);
    let plan = crate::plan::Layout::of(model);
    let mut need = vec![0; gpus.len()];
    for (r, &g) in ranges.iter().zip(&gpu_of) {
        need[g] += plan.gpu_slab_bytes_with_monitors(*r).total();
    }
    need
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// The first GPU count (taking the GPUs with the most free memory first) whose every GPU holds
/// its share plus [`GPU_RESERVE`].
fn fewest_that_fit(model: &Model, gpus: &[GpuInfo], slabs_per_gpu: usize) -> Option<Vec<GpuInfo>> {
    let mut sorted = gpus.to_vec();
    sorted.sort_by(|a, b| {
        b.memory_free
            .cmp(&a.memory_free)
            .then(a.ordinal.cmp(&b.ordinal))
    });
    (1..=sorted.len())
        .map(|k| sorted[..k].to_vec())
        .find(|set| fits(model, set, slabs_per_gpu))
}

fn fits(model: &Model, gpus: &[GpuInfo], slabs_per_gpu: usize) -> bool {
    per_gpu_bytes(model, gpus, slabs_per_gpu)
        .iter()
        .zip(gpus)
        .all(|(need, g)| need + GPU_RESERVE <= g.memory_free)
}

/// Decide the engine. `Err` only when `--backend cuda` was asked for and cannot be honoured.
pub fn choose(model: &Model, opts: &RunOptions) -> Result<Choice, String> {
    let explicit = match opts.backend {
        BackendChoice::Cpu => return Ok(Choice::Cpu("--backend cpu was given".into())),
        BackendChoice::Cuda => true,
        BackendChoice::Auto => false,
    };
    let refuse = |why: String| {
        if explicit {
            Err(why)
        } else {
            Ok(Choice::Cpu(why))
        }
    };
    let all = match super::probe_gpus() {
        Ok(g) => g,
        Err(e) => return refuse(format!("CUDA cannot be used: {e}")),
    };
    let spg = opts.slabs_per_gpu.unwrap_or(1).max(1);
    let gpus: Vec<GpuInfo> = match &opts.gpus {
        Some(list) => {
            let mut v = Vec::new();
            for &o in list {
                match all.iter().find(|g| g.ordinal == o) {
                    Some(g) if !v.contains(g) => v.push(g.clone()),
                    Some(_) => return Err(format!("GPU {o} is listed twice in --gpus; use --slabs-per-gpu for several slabs on one GPU")),
                    None => return Err(format!("--gpus names GPU {o}, but the driver sees GPUs 0..{}", all.len() - 1)),
                }
            }
            v
        }
        None => all.clone(),
    };
    let need_total: u64 = estimate(
        model,
        &[SlabRange {
            x0: 0,
            x1: model.grid.shape[0],
        }],
        model.precision.bytes(),
    )
    .total();
    let free_total: u64 = gpus.iter().map(|g| g.memory_free).sum();
    if opts.gpus.is_some() {
        if fits(model, &gpus, spg) {
            return Ok(Choice::Cuda(
                gpus.clone(),
                format!(
                    "{} GPU(s) given with --gpus hold the grid ({})",
                    gpus.len(),
                    gib(need_total)
                ),
            ));
        }
        return refuse(format!(
            "the grid needs {} but the {} GPU(s) given have {} free",
            gib(need_total),
            gpus.len(),
            gib(free_total)
        ));
    }
    match fewest_that_fit(model, &gpus, spg) {
        Some(set) => {
            let names: Vec<String> = set
                .iter()
                .map(|g| format!("{} ({})", g.ordinal, g.name))
                .collect();
            Ok(Choice::Cuda(
                set,
                format!(
                    "the grid ({}) fits on GPU {}",
                    gib(need_total),
                    names.join(", ")
                ),
            ))
        }
        None => refuse(format!(
            "the grid needs {} but the {} GPU(s) have {} free",
            gib(need_total),
            gpus.len(),
            gib(free_total)
        )),
    }
}

/// Where each slab goes: x ranges and the driver ordinal of each slab's GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Slab x ranges tiling [0, nx).
    pub ranges: Vec<SlabRange>,
    /// Driver ordinal of the GPU holding each slab.
    pub ordinals: Vec<usize>,
}

impl Placement {
    /// [`layout`] over `gpus`.
    pub fn over(model: &Model, gpus: &[GpuInfo], slabs_per_gpu: usize) -> Placement {
        let (ranges, gpu_of) = layout(model.grid.shape[0], gpus, slabs_per_gpu);
        Placement {
            ranges,
            ordinals: gpu_of.iter().map(|&g| gpus[g].ordinal).collect(),
        }
    }

    /// The distinct ordinals in order of first use, and each slab's index into them.
    pub fn devices(&self) -> (Vec<usize>, Vec<usize>) {
        let mut unique: Vec<usize> = Vec::new();
        let gpu_of = self
            .ordinals
            .iter()
            .map(|o| match unique.iter().position(|u| u == o) {
                Some(i) => i,
                None => {
                    unique.push(*o);
                    unique.len() - 1
                }
            })
            .collect();
        (unique, gpu_of)
    }
}

/// Run `model` on CUDA when asked for (`--backend cuda`) or when the memory plan chose CUDA
/// (`auto`); `None` means: run on the CPU. The plan's own slabs are used (it models `--gpus`
/// and `--slabs-per-gpu`).
pub fn run_planned(
    model: &Model,
    opts: &RunOptions,
    plan: &crate::plan::Plan,
    threads: usize,
    obs: &mut dyn Observer,
) -> Option<Result<Summary, RunError>> {
    let planned_cuda = plan.backend == crate::plan::PlanBackend::Cuda && plan.fits;
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
    try_run(model, opts, placement, threads, obs)
}

/// Run `model` on CUDA, on `placement` or else where [`choose`] says. `None` means: run on
/// the CPU (the reason has been passed to `obs.message` under `auto`).
pub fn try_run(
    model: &Model,
    opts: &RunOptions,
    placement: Option<Placement>,
    threads: usize,
    obs: &mut dyn Observer,
) -> Option<Result<Summary, RunError>> {
    let auto = opts.backend == BackendChoice::Auto;
    let spg = opts.slabs_per_gpu.unwrap_or(1).max(1);
    let mut placement = match placement {
        Some(p) => p,
        None => match choose(model, opts) {
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
            Err(why) => return Some(Err(RunError::Backend(why))),
        },
    };
    loop {
        match run_on(model, opts, &placement, threads, obs) {
            Ok(result) => return Some(result),
            Err(CudaError::OutOfMemory(m)) => {
                // Re-plan on one more GPU (never beyond those given with --gpus).
                let (used, _) = placement.devices();
                let all = super::probe_gpus().unwrap_or_default();
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
                return Some(Err(RunError::Backend(format!(
                    "{m}: the grid does not fit on the GPUs; use --backend cpu, more GPUs, or a coarser cell size"
                ))));
            }
            Err(e) => {
                if auto {
                    obs.message(&format!(
                        "CUDA could not start ({e}); running on the CPU instead"
                    ));
                    return None;
                }
                return Some(Err(RunError::Backend(e.to_string())));
            }
        }
    }
}

#[cfg(feature = "cuda")]
fn run_on(
    model: &Model,
    opts: &RunOptions,
    placement: &Placement,
    threads: usize,
    obs: &mut dyn Observer,
) -> Result<Result<Summary, RunError>, CudaError> {
    use crate::model::Precision;
    match model.precision {
        Precision::F32 => run_typed::<f32>(model, opts, placement, threads, obs),
        Precision::F64 => run_typed::<f64>(model, opts, placement, threads, obs),
    }
}

#[cfg(feature = "cuda")]
fn run_typed<T: crate::real::Real>(
    model: &Model,
    opts: &RunOptions,
    placement: &Placement,
    threads: usize,
    obs: &mut dyn Observer,
) -> Result<Result<Summary, RunError>, CudaError> {
    let mut backend = new_backend::<T>(model, placement, super::EngineOptions::default())?;
    // Test hook (scripts/gpu-check.sh, tests/cuda_backend.rs): a GPU that fails mid-run.
    if let Some(step) = std::env::var("YEE_CUDA_FAIL_AT_STEP")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        backend.fail_at_step(step);
    }
    Ok(crate::run::time_loop(
        model,
        &mut backend,
        &placement.ranges,
        threads,
        opts,
        obs,
    ))
}

/// Build the CUDA engine for `model` on `placement`.
#[cfg(feature = "cuda")]
pub fn new_backend<T: crate::real::Real>(
    model: &Model,
    placement: &Placement,
    opts: super::EngineOptions,
) -> Result<super::CudaBackend<T>, CudaError> {
    let (ordinals, gpu_of) = placement.devices();
    let dev = super::CudaDevice::new(&ordinals, T::PRECISION)?;
    Ok(super::Engine::new(
        dev,
        model,
        &placement.ranges,
        &gpu_of,
        opts,
        "cuda",
    )?)
}

#[cfg(not(feature = "cuda"))]
fn run_on(
    _: &Model,
    _: &RunOptions,
    _: &Placement,
    _: usize,
    _: &mut dyn Observer,
) -> Result<Result<Summary, RunError>, CudaError> {
    Err(CudaError::NotBuilt)
}

/// The allocation of the CUDA engine for `model` over `gpus` (what [`Backend::allocation`]
/// will report), without allocating.
///
/// [`Backend::allocation`]: crate::backend::Backend::allocation
pub fn planned_allocation(model: &Model, gpus: &[GpuInfo], slabs_per_gpu: usize) -> Allocation {
    let (ranges, _) = layout(model.grid.shape[0], gpus, slabs_per_gpu);
    estimate(model, &ranges, model.precision.bytes())
}

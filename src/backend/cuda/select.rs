//! Which GPUs a run uses, and building the CUDA engine on them.
//!
//! [`choose`] is the decision for `--backend auto|cpu|cuda`, `--gpus` and `--slabs-per-gpu`
//! when the memory plan's own placement is not used: CUDA when the libraries load, a GPU is
//! there and the grid fits in the free memory of the fewest GPUs that hold it; else the CPU,
//! with the reason in one sentence. It is kept small so the memory planner's decision can
//! replace it. [`new_backend`] builds the engine on a [`Placement`]; the run
//! (`crate::run`) re-plans on more GPUs when that runs out of memory.

use super::engine::estimate;
use super::GpuInfo;
use crate::backend::Allocation;
use crate::backend::BackendChoice;
use crate::decomp::SlabRange;
use crate::model::Model;

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

/// Decide the engine for `backend`, on the GPUs listed (`--gpus`, driver ordinals; `None`:
/// any) with `slabs_per_gpu` slabs on each (`None`: one). `Err` only when `--backend cuda`
/// was asked for and cannot be honoured.
pub fn choose(
    model: &Model,
    backend: BackendChoice,
    gpus: Option<&[usize]>,
    slabs_per_gpu: Option<usize>,
) -> Result<Choice, String> {
    let explicit = match backend {
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
    let spg = slabs_per_gpu.unwrap_or(1).max(1);
    let listed = gpus;
    let gpus: Vec<GpuInfo> = match listed {
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
    if listed.is_some() {
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

/// Build the CUDA engine for `model` on `placement`.
#[cfg(feature = "cuda")]
pub fn new_backend<T: crate::real::Real>(
    model: &Model,
    placement: &Placement,
    opts: super::EngineOptions,
) -> Result<super::CudaBackend<T>, super::CudaError> {
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

/// The allocation of the CUDA engine for `model` over `gpus` (what [`Backend::allocation`]
/// will report), without allocating.
///
/// [`Backend::allocation`]: crate::backend::Backend::allocation
pub fn planned_allocation(model: &Model, gpus: &[GpuInfo], slabs_per_gpu: usize) -> Allocation {
    let (ranges, _) = layout(model.grid.shape[0], gpus, slabs_per_gpu);
    estimate(model, &ranges, model.precision.bytes())
}

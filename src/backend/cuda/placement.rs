//! Building the CUDA engine where the plan placed it.
//!
//! The plan (`crate::plan`) decides which GPUs a run uses and how the grid is split over
//! them; [`Placement::of`] reads that placement and [`new_backend`] builds the engine on it.
//! When an allocation runs out of memory the error names the GPU (`CudaError::OutOfMemory`),
//! and the run (`crate::run`) plans again without it.

use super::GpuInfo;
use crate::decomp::SlabRange;
use crate::model::Model;
use crate::plan::Plan;

/// Device memory kept free on every GPU for the context, the kernel module and the driver:
/// the plan's figure.
pub use crate::plan::CUDA_CONTEXT_RESERVE as GPU_RESERVE;

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

/// Where each slab goes: x ranges and the driver ordinal of each slab's GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Slab x ranges tiling [0, nx).
    pub ranges: Vec<SlabRange>,
    /// Driver ordinal of the GPU holding each slab.
    pub ordinals: Vec<usize>,
}

impl Placement {
    /// The placement of a CUDA plan: its slabs' x ranges, and for each the plan's device
    /// index, which is the driver ordinal (the plan lists the probed GPUs first, in ordinal
    /// order). Empty unless the plan runs on CUDA.
    pub fn of(plan: &Plan) -> Placement {
        let (ranges, ordinals) = plan.gpu_slabs().into_iter().unzip();
        Placement { ranges, ordinals }
    }

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
    Ok(super::CudaEngine::new(
        dev,
        model,
        &placement.ranges,
        &gpu_of,
        opts,
        "cuda",
    )?)
}

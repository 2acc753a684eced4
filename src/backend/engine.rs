//! The one engine value a run steps: an enum over the concrete engines, each generic over the
//! field precision, so the choice is made once and every call inside an arm is static (no
//! trait object, no dispatch per slab or per cell).

use super::bloch::BlochPair;
use super::cpu::CpuBackend;
use super::Backend;

/// The engine the plan chose, in the model's precision.
pub enum Engine {
    /// The rayon CPU engine in f32.
    CpuF32(CpuBackend<f32>),
    /// The rayon CPU engine in f64.
    CpuF64(CpuBackend<f64>),
    /// A Bloch cell's pair of rayon CPU engines in f32 ([`BlochPair`]).
    BlochCpuF32(BlochPair<CpuBackend<f32>>),
    /// A Bloch cell's pair of rayon CPU engines in f64.
    BlochCpuF64(BlochPair<CpuBackend<f64>>),
    /// The CUDA engine in f32.
    #[cfg(feature = "cuda")]
    CudaF32(super::cuda::CudaBackend<f32>),
    /// The CUDA engine in f64.
    #[cfg(feature = "cuda")]
    CudaF64(super::cuda::CudaBackend<f64>),
    /// A Bloch cell's pair of CUDA engines in f32 ([`BlochPair`]).
    #[cfg(feature = "cuda")]
    BlochCudaF32(BlochPair<super::cuda::CudaBackend<f32>>),
    /// A Bloch cell's pair of CUDA engines in f64.
    #[cfg(feature = "cuda")]
    BlochCudaF64(BlochPair<super::cuda::CudaBackend<f64>>),
}

impl Engine {
    /// A short name for output files and messages ("cpu", "cuda").
    pub fn name(&self) -> String {
        match self {
            Engine::CpuF32(b) => b.name(),
            Engine::CpuF64(b) => b.name(),
            Engine::BlochCpuF32(b) => b.name(),
            Engine::BlochCpuF64(b) => b.name(),
            #[cfg(feature = "cuda")]
            Engine::CudaF32(b) => b.name(),
            #[cfg(feature = "cuda")]
            Engine::CudaF64(b) => b.name(),
            #[cfg(feature = "cuda")]
            Engine::BlochCudaF32(b) => b.name(),
            #[cfg(feature = "cuda")]
            Engine::BlochCudaF64(b) => b.name(),
        }
    }
}

//! What the plan decided and the numbers behind it, without prose: the backend follows from
//! it ([`Decision::backend`]) and the one-sentence reason is built from it (`reason`).

use super::PlanBackend;
use serde::Serialize;

/// Why there is no GPU to plan on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum NoGpu {
    /// `--gpus` names this GPU twice.
    ListedTwice {
        /// The index given twice.
        gpu: usize,
    },
    /// `--gpus` names a GPU the hardware lacks.
    Missing {
        /// The index given.
        gpu: usize,
        /// GPUs there are.
        count: usize,
    },
    /// Every GPU there was failed to start or ran out of memory in an earlier attempt.
    AllFailed {
        /// GPUs left out.
        count: usize,
    },
    /// The model holds a cell pass ([`crate::model::CellPass`]) without a CUDA form
    /// ([`crate::model::CellPass::kernel`] gives none).
    CellPasses,
    /// None was found or given.
    NoneFound {
        /// The hardware's note on why (from the driver or the probe).
        note: String,
    },
}

/// How the run sits in host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HostFit {
    /// Bytes the candidate needs in all.
    pub needs: u64,
    /// Host memory available.
    pub available: u64,
    /// True when the candidate fits where it would run.
    pub fits: bool,
    /// Probe series the writer keeps (host).
    pub probe_series: u64,
    /// Host monitor buffers and pinned mirrors.
    pub monitors: u64,
    /// The host-side buffers together.
    pub host_side: u64,
    /// True when the host-side buffers alone exceed host memory.
    pub host_side_short: bool,
}

/// How the run sits on the GPUs considered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuFit {
    /// Bytes on the GPUs (slabs, their monitor buffers, context reserves).
    pub device_bytes: u64,
    /// Memory of the GPUs used, less their context reserves.
    pub usable_bytes: u64,
    /// GPUs considered.
    pub considered: usize,
    /// GPUs used.
    pub used: usize,
    /// Fewest GPUs that hold the grid, if any number does.
    pub fewest: Option<usize>,
    /// Halo exchange and launch time over update time with the GPUs used.
    pub overhead_fraction: f64,
    /// The same with one more GPU, when one more was possible.
    pub next_fraction: Option<f64>,
    /// The GPUs given with `--gpus`, when they were given rather than chosen.
    pub given: Option<Vec<usize>>,
    /// The host side of this placement.
    pub host: HostFit,
}

/// The plan's decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Decision {
    /// `--backend cpu`: the CPU, fitting or not.
    CpuRequested {
        /// The CPU candidate.
        cpu: HostFit,
    },
    /// `--backend cuda` with no GPU to use.
    CudaRequestedNoGpu {
        /// Why.
        why: NoGpu,
    },
    /// CUDA on the GPUs chosen (or given).
    Cuda {
        /// The placement.
        gpu: GpuFit,
    },
    /// `--backend cuda`, and the GPUs cannot hold it.
    CudaRequestedShort {
        /// The closest placement.
        gpu: GpuFit,
    },
    /// `auto`: the GPUs cannot hold it, the host can.
    CpuInstead {
        /// The closest GPU placement.
        gpu: GpuFit,
        /// The CPU candidate.
        cpu: HostFit,
    },
    /// `auto`: no GPU, and the host holds it.
    CpuNoGpu {
        /// Why there is no GPU.
        why: NoGpu,
        /// The CPU candidate.
        cpu: HostFit,
    },
    /// `auto`: the host-side buffers are the limit for both engines.
    HostTooSmall {
        /// The closest GPU placement.
        gpu: GpuFit,
        /// The CPU candidate.
        cpu: HostFit,
    },
    /// `auto`: neither the GPUs nor the host hold it.
    NothingFits {
        /// The closest GPU placement.
        gpu: GpuFit,
        /// The CPU candidate.
        cpu: HostFit,
    },
    /// `auto`: no GPU, and the host cannot hold it.
    NothingFitsNoGpu {
        /// Why there is no GPU.
        why: NoGpu,
        /// The CPU candidate.
        cpu: HostFit,
    },
}

impl Decision {
    /// The engine this decision runs on.
    pub fn backend(&self) -> PlanBackend {
        match self {
            Decision::CpuRequested { cpu } if cpu.fits => PlanBackend::Cpu,
            Decision::Cuda { .. } => PlanBackend::Cuda,
            Decision::CpuInstead { .. } | Decision::CpuNoGpu { .. } => PlanBackend::Cpu,
            _ => PlanBackend::None,
        }
    }
}

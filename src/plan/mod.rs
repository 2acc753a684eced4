//! The memory plan (dry run): what a model needs, where it fits, how the grid is split and
//! roughly how long it takes, computed from the [`Model`] without allocating the grid.
//!
//! [`plan`] is a pure function of the model, the [`Hardware`] and the [`PlanOptions`]; `yee
//! plan` prints it and `yee run` follows it. Every byte count comes from [`bytes`]: the
//! backends allocate exactly [`slab_bytes`] per slab (the CPU backend checks its own count
//! against it), and the monitor buffers are the [`monitor_staging_len`] staging and the flux
//! DFTs ([`monitor_staging_bytes`]).
//!
//! Modules: [`hardware`] (GPU table, `--gpus` and size parsing, the host), [`bytes`] (byte
//! accounting), `assign` (device choice, slab split, time model, suggestions), `report`
//! (the text report).

mod assign;
pub mod bytes;
pub mod hardware;
mod report;

pub use bytes::{
    bytes_per_cell_step, monitor_staging_bytes, monitor_staging_len, probe_series_bytes,
    slab_bytes, Layout,
};
pub use hardware::{
    parse_gpus, parse_size, Device, DeviceKind, GpuModel, Hardware, CUDA_CONTEXT_RESERVE,
    GPU_MODELS,
};

use crate::backend::Allocation;
use crate::decomp::SlabRange;
use crate::model::Model;
use crate::run::BackendChoice;
use serde::Serialize;

/// Fraction of peak memory bandwidth a GPU update is assumed to achieve.
pub const GPU_ACHIEVED_FRACTION: f64 = 0.8;
/// Fraction of the assumed host bandwidth the CPU update is assumed to achieve.
pub const CPU_ACHIEVED_FRACTION: f64 = 0.6;
/// Cost of one kernel launch or one halo copy on a GPU, seconds.
pub const LAUNCH_OVERHEAD_S: f64 = 10e-6;
/// Kernels launched per step on each GPU: the H and E updates and their CPML corrections.
pub const KERNELS_PER_STEP: u32 = 4;
/// Halo plane copies per step into each GPU's slab when the grid is split (Hy, Hz, Ey, Ez).
pub const HALO_COPIES_PER_STEP: u32 = 4;
/// GPUs are added while halo exchange and launches cost at most this fraction of a step.
pub const OVERHEAD_LIMIT: f64 = 0.05;

/// What the user asks of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanOptions {
    /// Which backend may be used (`auto` prefers CUDA when the grid fits on the GPUs).
    pub backend: BackendChoice,
    /// CPU slab count (None: the run's default, [`cpu_slabs`]).
    pub slabs: Option<usize>,
    /// CPU worker threads (None: the host's cores).
    pub threads: Option<usize>,
    /// Price of one GPU for one hour, for the cost estimate.
    pub price_per_gpu_hour: Option<f64>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            backend: BackendChoice::Auto,
            slabs: None,
            threads: None,
            price_per_gpu_hour: None,
        }
    }
}

/// The CPU backend's slab count: `slabs` if given, else one per thread with every slab at
/// least 8 planes thick; always 1 to nx.
pub fn cpu_slabs(nx: usize, threads: usize, slabs: Option<usize>) -> usize {
    slabs
        .unwrap_or_else(|| threads.min(nx / 8).max(1))
        .clamp(1, nx.max(1))
}

/// The engine a plan chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanBackend {
    /// CUDA GPUs.
    Cuda,
    /// The rayon CPU engine.
    Cpu,
    /// Nothing available holds the grid.
    None,
}

impl PlanBackend {
    /// "cuda", "cpu" or "none".
    pub fn name(self) -> &'static str {
        match self {
            PlanBackend::Cuda => "cuda",
            PlanBackend::Cpu => "cpu",
            PlanBackend::None => "none",
        }
    }
}

/// Bytes by category, for the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Bytes {
    /// E and H over the owned cells (six components).
    pub fields: u64,
    /// Per-component material indices and row summaries.
    pub materials: u64,
    /// CPML psi arrays.
    pub pml: u64,
    /// Monitor buffers: the snapshot and flux-plane staging and the flux DFTs (host).
    pub monitors: u64,
    /// Probe time series the HDF5 writer keeps until the end of the run (host, f64).
    pub probe_series: u64,
    /// Halo planes (one on each side of each slab, six components).
    pub halos: u64,
    /// Per-device overhead: the CUDA context reserve of every GPU used.
    pub overhead: u64,
    /// Everything above.
    pub total: u64,
}

/// A device as the plan saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanDevice {
    /// Name as printed.
    pub name: String,
    /// "gpu" or "host".
    pub kind: DeviceKind,
    /// Memory available to the run, bytes.
    pub memory_bytes: u64,
    /// Peak memory bandwidth, bytes/s.
    pub bandwidth_bytes_per_s: f64,
    /// True when the bandwidth is an assumption.
    pub bandwidth_assumed: bool,
    /// True when a slab of this plan is placed on it.
    pub used: bool,
}

/// One slab: which device holds it, its x range and what it allocates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlabPlan {
    /// Index into [`Plan::devices`].
    pub device: usize,
    /// First owned x plane.
    pub x_start: usize,
    /// One past the last owned x plane.
    pub x_end: usize,
    /// Owned cells.
    pub cells: u64,
    /// Bytes the backend allocates for it ([`slab_bytes`]).
    pub bytes: u64,
    /// The same by category.
    pub allocation: Allocation,
    /// Bytes it takes on its device (with the CUDA context reserve on a GPU) over the device's
    /// memory.
    pub share: f64,
}

/// The run time model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// Whole run, seconds (None when nothing fits).
    pub seconds: Option<f64>,
    /// One step, seconds.
    pub seconds_per_step: Option<f64>,
    /// Bytes moved per cell and step ([`bytes_per_cell_step`]).
    pub bytes_per_cell_step: u64,
    /// Assumed fraction of peak bandwidth achieved.
    pub achieved_fraction: f64,
    /// Halo exchange and launch time over update time per step.
    pub overhead_fraction: Option<f64>,
    /// Cost of the run with `--price` (GPU plans only).
    pub cost: Option<f64>,
}

/// The memory plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Scene (simulation) name.
    pub scene: String,
    /// [nx, ny, nz].
    pub grid: [usize; 3],
    /// Cell size (m).
    pub cell_size: [f64; 3],
    /// nx ny nz.
    pub cells: u64,
    /// Time steps.
    pub steps: usize,
    /// Time step (s).
    pub dt: f64,
    /// "f32" or "f64".
    pub precision: &'static str,
    /// Bytes by category.
    pub bytes: Bytes,
    /// The engine chosen.
    pub backend: PlanBackend,
    /// Why, in one sentence.
    pub reason: String,
    /// True when the grid fits on the chosen backend.
    pub fits: bool,
    /// The GPUs considered, then the host.
    pub devices: Vec<PlanDevice>,
    /// The slabs tiling [0, nx): the chosen split, or the closest attempt when nothing fits.
    pub slabs: Vec<SlabPlan>,
    /// The run time model.
    pub estimate: Estimate,
    /// When nothing fits: what would.
    pub suggestions: Vec<String>,
    /// The assumptions behind the numbers.
    pub assumptions: Vec<String>,
    /// Where the GPUs came from, or why there are none.
    pub gpu_note: String,
    /// Where the host memory figure came from.
    pub host_note: String,
}

impl Plan {
    /// The slabs' x ranges.
    pub fn ranges(&self) -> Vec<SlabRange> {
        self.slabs
            .iter()
            .map(|s| SlabRange {
                x0: s.x_start,
                x1: s.x_end,
            })
            .collect()
    }

    /// What the run allocates by backend category: the slabs plus the snapshot staging buffer
    /// (`monitors`). A run's `RunInfo::allocation` equals this.
    pub fn allocation(&self) -> Allocation {
        let mut a = Allocation::default();
        for s in &self.slabs {
            a.add(&s.allocation);
        }
        a.monitors += self.bytes.monitors;
        a
    }

    /// The text report `yee plan` prints.
    pub fn render(&self) -> String {
        report::render(self)
    }

    /// The JSON object `yee plan --json` prints.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a plan serialises to JSON")
    }
}

/// Plan `model` on `hardware`: bytes by category, the device and slab assignment, the backend
/// and why, the time estimate and, when nothing fits, what would. Pure and fast: arithmetic on
/// the grid shape, never a loop over cells.
pub fn plan(model: &Model, hardware: &Hardware, options: &PlanOptions) -> Plan {
    assign::plan(model, hardware, options)
}

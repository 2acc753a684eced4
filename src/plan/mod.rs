//! The memory plan (dry run): what a model needs, where it fits, how the grid is split and
//! roughly how long it takes, computed from the [`Model`] without allocating the grid.
//!
//! [`plan`] is a pure function of the model, the [`Hardware`] and the [`PlanOptions`]; `yee
//! plan` prints it and `yee run` follows it: it is the one decider (backend, GPUs with
//! `--gpus` ordinals and `--slabs-per-gpu`, slab split; [`replan`] after a failed start) and
//! the one source of sizes. Every byte count comes from [`bytes`]: the CPU backend allocates
//! exactly [`slab_bytes`] per slab (it checks its own count against it) and holds the
//! [`monitor_staging_bytes`] host buffers; the CUDA engine allocates every array and monitor
//! buffer by the formulas there ([`Layout::slab_lengths`], [`MonitorLayout`]), each on the GPU
//! of the slab it serves, with pinned host mirrors.
//!
//! Modules: [`hardware`] (GPU table, `--gpus` and size parsing, the host), [`bytes`] (byte
//! accounting), `assign` (candidates, device choice, slab split, time model),
//! [`decision`] (what was decided, without prose), `reason` (the sentence built from it),
//! `suggest` (what would fit), `report` (the text report).

mod assign;
pub mod bytes;
pub mod decision;
pub mod hardware;
pub mod ranks;
mod reason;
mod report;
pub use report::bytes_h;
pub mod scan;
mod suggest;

pub use bytes::{
    bytes_per_cell_step, flux_bytes, monitor_staging_bytes, monitor_staging_len, output_bytes,
    probe_series_bytes, slab_bytes, Allocation, Layout, MonitorLayout, OutputBytes,
};
pub use decision::{Decision, GpuFit, HostFit, NoGpu};
pub use hardware::{
    parse_gpus, parse_size, Device, DeviceKind, GpuModel, Hardware, SpecError,
    CUDA_CONTEXT_RESERVE, GPU_MODELS, NVLINK3_BANDWIDTH, NVLINK4_BANDWIDTH, PCIE_BANDWIDTH,
};

use crate::decomp::{split_weighted, SlabRange};
use crate::model::Model;
use serde::Serialize;

/// Which engine to run on: the user's `--backend`, which the plan decides under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// CUDA when the plan puts the grid on GPUs, else the CPU.
    #[default]
    Auto,
    /// The rayon CPU engine.
    Cpu,
    /// CUDA GPUs; an error if none can be used.
    Cuda,
}

impl BackendChoice {
    /// The names `--backend` takes, in this order.
    pub const NAMES: [&'static str; 3] = ["auto", "cpu", "cuda"];
}

impl std::str::FromStr for BackendChoice {
    type Err = String;

    /// `auto`, `cpu` or `cuda`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Cpu),
            "cuda" => Ok(BackendChoice::Cuda),
            _ => Err(format!(
                "expected one of {}, got `{s}`",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// The slab split over GPUs of `usable` bytes each (their memory less the context reserve),
/// `slabs_per_gpu` consecutive slabs on each, sized in proportion to each GPU's usable memory:
/// the slab ranges and each slab's index into `usable`. The one GPU weighting: the plan and
/// the CUDA backend both split by it.
pub fn gpu_split(nx: usize, usable: &[u64], slabs_per_gpu: usize) -> (Vec<SlabRange>, Vec<usize>) {
    let spg = slabs_per_gpu.max(1);
    let weights: Vec<f64> = usable
        .iter()
        .flat_map(|&u| std::iter::repeat_n(u.max(1) as f64 / spg as f64, spg))
        .collect();
    let ranges = split_weighted(nx, &weights);
    let gpu_of = (0..ranges.len()).map(|s| s / spg).collect();
    (ranges, gpu_of)
}

/// True if the CPU engine runs `slabs` slabs on `threads` threads with the fused H+E sweep
/// (one thread per slab, so with at least as many slabs as threads; with fewer the run takes
/// the two-pass update, parallel within a slab: `crate::run::mode_for_split`).
pub fn cpu_update_is_fused(slabs: usize, threads: usize) -> bool {
    slabs >= threads
}

/// Fraction of peak memory bandwidth a GPU update is assumed to achieve.
pub const GPU_ACHIEVED_FRACTION: f64 = 0.8;
/// Fraction of the assumed host bandwidth the CPU update is assumed to achieve.
pub const CPU_ACHIEVED_FRACTION: f64 = 0.6;
/// Cost of one kernel launch or one halo copy on a GPU, seconds.
pub const LAUNCH_OVERHEAD_S: f64 = 10e-6;
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
    /// `--gpus 0,2`: exactly these GPUs (indices into [`Hardware::gpus`], which are the
    /// driver ordinals of probed GPUs), slabs in this order (None: the plan picks).
    pub gpus: Option<Vec<usize>>,
    /// `--slabs-per-gpu`: consecutive slabs on each GPU (None: one).
    pub slabs_per_gpu: Option<usize>,
    /// GPUs left out (indices into [`Hardware::gpus`]): those that failed to start or ran out
    /// of memory in an earlier attempt ([`replan`]).
    pub exclude_gpus: Vec<usize>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            backend: BackendChoice::Auto,
            slabs: None,
            threads: None,
            price_per_gpu_hour: None,
            gpus: None,
            slabs_per_gpu: None,
            exclude_gpus: Vec::new(),
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
    /// The dispersive pass's arrays (cell indices, E^n, pole state) over the cells of
    /// materials with poles.
    pub dispersive: u64,
    /// Source tables: the TF/SF source's correction points and its 1-D incident grid (one
    /// copy per slab that holds points; [`Layout::tfsf_bytes`]).
    pub sources: u64,
    /// The state of the scene's cell passes ([`Layout::cell_pass_bytes`]).
    pub passes: u64,
    /// Monitor buffers in host memory: on the CPU the snapshot and flux-plane staging buffers
    /// and the flux DFT accumulators; on CUDA the host copy of the largest snapshot region.
    pub monitors: u64,
    /// Monitor buffers on the GPUs (CUDA): probe ring and sample addresses, snapshot staging,
    /// flux DFT accumulators, each on the GPU of the slab it reads.
    pub device_monitors: u64,
    /// Pinned host mirrors of the GPU monitor buffers (probe ring, snapshot staging).
    pub pinned: u64,
    /// Pinned host planes staging the halo copies between GPUs without peer access
    /// ([`Hardware::peer_access`]; [`Layout::staged_halo_total`]): 0 with peer access.
    pub staged_halos: u64,
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
    /// Bytes the update moves per cell and step, the cells' part: the two-pass update's
    /// [`bytes_per_cell_step`] on GPUs, the fused sweep's
    /// [`bytes::fused_update_bytes_per_cell_step`] on the CPU with a slab per thread.
    pub bytes_per_cell_step: u64,
    /// Assumed fraction of peak bandwidth achieved.
    pub achieved_fraction: f64,
    /// Halo exchange and launch time over update time per step.
    pub overhead_fraction: Option<f64>,
    /// Cost of the run with `--price` (GPU plans only).
    pub cost: Option<f64>,
}

/// One axis of the mesh.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct AxisMesh {
    /// Cells along the axis.
    pub cells: usize,
    /// The smallest cell (m).
    pub min_cell: f64,
    /// The largest cell (m).
    pub max_cell: f64,
    /// True for a graded axis (node lines), false for a uniform one.
    pub graded: bool,
}

/// Another grid over the same domain, as the plan would size it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeshAlternative {
    /// [nx, ny, nz].
    pub shape: [usize; 3],
    /// nx ny nz.
    pub cells: u64,
    /// Bytes in all: on the GPUs that would hold it when some would, else on the host (CPU
    /// backend).
    pub bytes: u64,
    /// Whether it fits on this hardware under the plan's options.
    pub fits: bool,
    /// Where it fits (`none` when it does not).
    pub backend: PlanBackend,
    /// GPUs it needs when it fits on CUDA, else 0.
    pub gpus: usize,
}

/// A refinement box the plan suggests: at most `cell_size` inside it, per axis (the
/// background cell along axes the object does not need refined).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RefineBox {
    /// Index of the object (scene `[[geometry]]` order) it surrounds.
    pub object: usize,
    /// Centre (m).
    pub center: [f64; 3],
    /// Size (m).
    pub size: [f64; 3],
    /// Largest cell inside (m), per axis.
    pub cell_size: [f64; 3],
}

/// Refinement instead of a uniform grid that does not fit: a coarser background that resolves
/// vacuum as well as the uniform cell resolves the densest material, and boxes at the uniform
/// cell (or the material's own wavelength rule) around the objects that need it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RefinementSuggestion {
    /// The background cell (m), per axis.
    pub background_cell: [f64; 3],
    /// The grading (largest ratio of neighbouring cells) the count assumes.
    pub grading: f64,
    /// Cells per shortest wavelength the uniform cell gives in the densest material, which the
    /// boxes and the background keep.
    pub cells_per_wavelength: f64,
    /// The boxes, one per object that needs a cell finer than the background.
    pub boxes: Vec<RefineBox>,
    /// The graded grid they give.
    pub grid: MeshAlternative,
}

/// The mesh as the plan reports it (`yee plan`, JSON `mesh`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MeshReport {
    /// True when every axis is uniform.
    pub uniform: bool,
    /// x, y, z.
    pub axes: [AxisMesh; 3],
    /// Cells of a uniform grid at the background cell over the same domain.
    pub background_cells: u64,
    /// Cells over `background_cells`: what the refinement costs (1 on a uniform grid).
    pub refinement_factor: f64,
    /// On a graded grid: a uniform grid at the finest cell of each axis.
    pub finest_uniform: Option<MeshAlternative>,
    /// When a uniform grid does not fit and some object needs the fine cell: the refinement
    /// that would replace it.
    pub refinement: Option<RefinementSuggestion>,
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
    /// Why, in one sentence (built from [`Plan::decision`]).
    pub reason: String,
    /// What was decided and the numbers behind it.
    pub decision: decision::Decision,
    /// True when the grid fits on the chosen backend.
    pub fits: bool,
    /// The GPUs considered, then the host.
    pub devices: Vec<PlanDevice>,
    /// The slabs tiling [0, nx): the chosen split, or the closest attempt when nothing fits.
    pub slabs: Vec<SlabPlan>,
    /// The run time model.
    pub estimate: Estimate,
    /// The size of the result file by the end of the run.
    pub output: OutputBytes,
    /// Options the plan was given that it cannot honour, and what it does instead.
    pub notes: Vec<String>,
    /// When nothing fits: what would.
    pub suggestions: Vec<String>,
    /// The mesh: cells and cell sizes per axis, what the refinement costs, and when a uniform
    /// grid does not fit, the refinement that would.
    pub mesh: MeshReport,
    /// The assumptions behind the numbers.
    pub assumptions: Vec<String>,
    /// Where the GPUs came from, or why there are none.
    pub gpu_note: String,
    /// Where the host memory figure came from.
    pub host_note: String,
    /// With a `[scan]`: how the traces run and how long they take (the rest of the plan is
    /// for one trace). Left out of the JSON without a scan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan: Option<scan::ScanPlan>,
    /// About how long painting the geometry takes when the run starts, seconds
    /// ([`Plan::with_painting_time`], which `yee plan` calls; a run does not spend the time
    /// measuring it); None without objects or when not measured.
    pub painting_seconds: Option<f64>,
    /// The conformal PEC surfaces: cut faces, what the stability rule did, the courant and
    /// whether the default time step was reduced for them; None (null) without cut faces.
    pub conformal: Option<crate::model::ConformalSummary>,
    /// Mode sources and monitors (solved at run start) and an `[sparameters]` sweep's runs;
    /// left out of the JSON without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modes: Option<ModesPlan>,
    /// Field sets the engine steps: 2 for a Bloch cell (its real and imaginary parts, each a
    /// whole engine: [`crate::backend::bloch`]), else 1.
    pub field_sets: u64,
}

/// What the mode sources and monitors of a model cost before the first step, and the runs of
/// its S-parameter sweep ([`Plan::modes`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ModesPlan {
    /// Mode planes solved at run start (one per mode source, one per mode monitor).
    pub planes: usize,
    /// Eigenproblem solves: a source's at its centre frequency and its band's low edge, a
    /// monitor's at each of its frequencies.
    pub solves: usize,
    /// Unknowns of the largest plane's eigenproblem (two per cell).
    pub largest_unknowns: u64,
    /// About how long the solves take (s): [`ModesPlan::seconds_for`] per solve, a rough
    /// scaling measured on 2 cores (the shift-invert Arnoldi's restarts vary with how close
    /// the asked modes lie to the next).
    pub seconds: f64,
    /// An `[sparameters]` sweep's ports, one run each (empty without a sweep).
    pub ports: Vec<String>,
}

impl ModesPlan {
    /// The plan's view of `model`'s mode planes, None without any.
    pub fn of(model: &crate::model::Model) -> Option<ModesPlan> {
        let mut sizes: Vec<(u64, usize)> = Vec::new();
        let mut seen = Vec::new();
        for s in &model.sources {
            if let Some((sheet, _)) = &s.mode {
                if !seen.contains(&sheet.name) {
                    seen.push(sheet.name.clone());
                    let r = sheet.plane.ranges;
                    sizes.push((2 * ((r[0][1] - r[0][0]) * (r[1][1] - r[1][0])) as u64, 2));
                }
            }
        }
        for f in model.fluxes.iter().filter(|f| f.mode.is_some()) {
            sizes.push((2 * f.patches[0].cells() as u64, f.frequencies.len()));
        }
        if sizes.is_empty() {
            return None;
        }
        Some(ModesPlan {
            planes: sizes.len(),
            solves: sizes.iter().map(|s| s.1).sum(),
            largest_unknowns: sizes.iter().map(|s| s.0).max().unwrap_or(0),
            seconds: sizes
                .iter()
                .map(|&(n, k)| k as f64 * ModesPlan::seconds_for(n))
                .sum(),
            ports: model
                .sparameters
                .as_ref()
                .map_or(Vec::new(), |sp| sp.ports.clone()),
        })
    }

    /// About how long one solve of `unknowns` takes (s): 5e-7 n^1.5, from a 240-unknown slab
    /// (2 ms) and a 120,000-unknown strip plane (22 s, four modes) on 2 cores.
    pub fn seconds_for(unknowns: u64) -> f64 {
        5e-7 * (unknowns as f64).powf(1.5)
    }
}

impl Plan {
    /// The plan with [`Plan::painting_seconds`] measured on `model` (a few blocks of planes
    /// painted and timed, about a quarter of a second: [`Model::painting_seconds`]), for the
    /// cores the plan's CPU split uses.
    pub fn with_painting_time(
        mut self,
        model: &Model,
        hardware: &Hardware,
        options: &PlanOptions,
    ) -> Plan {
        let cores = options.threads.unwrap_or(hardware.cores).max(1);
        self.painting_seconds = model.painting_seconds(cores);
        self
    }

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

    /// What the run allocates by backend category: the slabs (with, on CUDA, their monitor
    /// buffers on the device) plus the host monitor buffers and pinned mirrors (`monitors`).
    /// A run's `RunInfo::allocation` equals this; on CUDA without peer access the engine also
    /// holds the staged halo planes, which the plan counts apart (`Bytes::staged_halos`).
    pub fn allocation(&self) -> Allocation {
        let mut a = Allocation::default();
        for s in &self.slabs {
            a.add(&s.allocation);
        }
        a.monitors += self.bytes.monitors + self.bytes.pinned;
        a
    }

    /// The plan's GPU placement: each slab's x range and the index into
    /// [`Hardware::gpus`] of its GPU (the driver ordinal of a probed GPU). Empty unless the
    /// plan runs on CUDA.
    pub fn gpu_slabs(&self) -> Vec<(SlabRange, usize)> {
        if self.backend != PlanBackend::Cuda {
            return Vec::new();
        }
        self.slabs
            .iter()
            .map(|s| {
                (
                    SlabRange {
                        x0: s.x_start,
                        x1: s.x_end,
                    },
                    s.device,
                )
            })
            .collect()
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

/// How starting the engine of a plan failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFailure {
    /// The GPU of this index into [`Hardware::gpus`] ran out of memory while allocating.
    OutOfMemory(usize),
    /// CUDA could not start at all (driver, libraries, kernel compilation): no GPU is usable.
    CudaUnavailable,
}

/// Plan `model` again after `failure` of a start on `previous`'s GPUs: the failed GPU (or, when
/// CUDA cannot start, every GPU) is left out, and the host's available memory is read again.
/// Under `auto` the plan may move to other GPUs or to the CPU, with the CPU's own slab split
/// and host-memory check; under `--backend cuda` it says what is left, or that nothing is.
pub fn replan(
    model: &Model,
    hardware: &Hardware,
    options: &PlanOptions,
    failure: StartFailure,
) -> Plan {
    let mut options = options.clone();
    failure.leave_out(&mut options, hardware);
    plan(model, &hardware.with_fresh_host_memory(), &options)
}

impl StartFailure {
    /// Add the GPUs this failure rules out to `options.exclude_gpus`: the one that ran out of
    /// memory, or every GPU of `hardware` when CUDA cannot start. A caller that re-plans more
    /// than once keeps its options up to date with this, so every failed GPU stays out.
    pub fn leave_out(self, options: &mut PlanOptions, hardware: &Hardware) {
        match self {
            StartFailure::OutOfMemory(gpu) => options.exclude_gpus.push(gpu),
            StartFailure::CudaUnavailable => options.exclude_gpus.extend(0..hardware.gpus.len()),
        }
        options.exclude_gpus.sort_unstable();
        options.exclude_gpus.dedup();
    }
}

/// Plan `model` on `hardware`: bytes by category, the device and slab assignment, the backend
/// and why, the time estimate and, when nothing fits, what would. Pure and fast: arithmetic on
/// the grid shape, never a loop over cells.
pub fn plan(model: &Model, hardware: &Hardware, options: &PlanOptions) -> Plan {
    let (mut plan, cpu_fit) = assign::plan(model, hardware, options);
    // Apart from the decision: `suggest` tries other layouts with the assignment's candidate
    // search, so the assignment must not call back into it.
    let layout = Layout::of(model);
    plan.mesh = suggest::mesh_report(model, &layout, hardware, options, plan.fits);
    if !plan.fits {
        plan.suggestions = suggest::suggestions(model, &layout, hardware, options, &cpu_fit);
        plan.suggestions
            .extend(suggest::refinement_text(model, &plan.mesh, hardware));
    }
    if let Some(s) = &model.scan {
        let threads = options.threads.unwrap_or(hardware.cores).max(1);
        // The GPUs a scan's traces may spread over: those `--gpus` names (else every one),
        // less any that failed to start.
        let gpus: Vec<usize> = match &options.gpus {
            Some(only) => only.clone(),
            None => (0..hardware.gpus.len()).collect(),
        };
        let gpus: Vec<usize> = gpus
            .into_iter()
            .filter(|g| *g < hardware.gpus.len() && !options.exclude_gpus.contains(g))
            .collect();
        plan.scan = Some(scan::schedule(&plan, s.traces, threads, &gpus));
        if let Some(one) = one_gpu_per_trace(model, hardware, options, &plan, &gpus) {
            return one;
        }
    }
    plan
}

/// A scan on the GPUs `--gpus` lists, whose single-run plan splits each trace over them: the
/// plan of one trace on the first of them instead, its traces spread over all of them several
/// at once ([`scan::ScanSchedule::TracesPerGpu`]), when one GPU holds a trace and that
/// schedule takes it; None otherwise (the traces then run one after another on the split).
fn one_gpu_per_trace(
    model: &Model,
    hardware: &Hardware,
    options: &PlanOptions,
    split: &Plan,
    gpus: &[usize],
) -> Option<Plan> {
    let listed = options.gpus.as_ref().filter(|g| g.len() > 1)?;
    let scan = split.scan.as_ref()?;
    if scan.schedule == scan::ScanSchedule::TracesPerGpu || split.backend != PlanBackend::Cuda {
        return None;
    }
    let first = *gpus.first()?;
    let single = PlanOptions {
        gpus: Some(vec![first]),
        ..options.clone()
    };
    let mut one = plan(model, hardware, &single);
    let threads = options.threads.unwrap_or(hardware.cores).max(1);
    let spread = scan::schedule(&one, scan.traces, threads, gpus);
    if spread.schedule != scan::ScanSchedule::TracesPerGpu {
        return None;
    }
    one.notes.push(format!(
        "--gpus {}: each trace runs on one of these GPUs rather than split over them",
        listed
            .iter()
            .map(|g| g.to_string())
            .collect::<Vec<_>>()
            .join(",")
    ));
    one.scan = Some(spread);
    Some(one)
}

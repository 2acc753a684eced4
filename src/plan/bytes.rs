//! Byte accounting: the one place that says how many bytes each allocation takes.
//!
//! [`slab_bytes`] is what a backend allocates for one slab (the CPU backend's own count of its
//! vectors is asserted equal to it in debug builds and in `tests/plan_alloc.rs`);
//! [`monitor_staging_len`] is the snapshot and flux-plane staging the CPU backend holds;
//! [`probe_series_bytes`] is what the HDF5 writer keeps of the probe time series;
//! [`MonitorLayout`] places the CUDA engine's monitor buffers (probe ring, snapshot staging,
//! flux DFT accumulators on the device, their pinned host mirrors) slab by slab, with one
//! formula per buffer ([`probe_ring_bytes`], [`probe_mirror_bytes`],
//! [`snapshot_staging_bytes`], [`flux_accumulator_bytes`], [`staged_halo_bytes`]) that the
//! engine allocates by.

use crate::decomp::SlabRange;
use crate::model::{Axis, BoundaryKind, Model, Precision};

/// Bytes allocated, by category: what the plan lists for a slab and what a backend reports
/// it allocated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Allocation {
    /// The six field components over the owned cells.
    pub fields: u64,
    /// The halo planes of the six field components.
    pub halos: u64,
    /// Per-component material indices and per-row material summaries.
    pub materials: u64,
    /// CPML auxiliary (psi) arrays.
    pub pml: u64,
    /// The dispersive pass's arrays: per dispersive cell a u32 index, E^n and the poles'
    /// state (only over the cells of materials with poles).
    pub dispersive: u64,
    /// Monitor buffers held by the backend (probe samples, snapshot staging).
    pub monitors: u64,
    /// Source tables beyond the fields: the TF/SF source's 1-D incident grid (e and h, one
    /// value each per node, on the host for the CPU backend and on each GPU that holds part
    /// of the box for CUDA) and its correction points (per point a u32 cell offset, a u32
    /// 1-D node, the weight and the factor).
    pub sources: u64,
    /// The state of the model's cell passes ([`crate::model::CellPass`]): per pass, its
    /// slots per cell over its cells in the slab.
    pub passes: u64,
}

impl Allocation {
    /// Sum of every category.
    pub fn total(&self) -> u64 {
        self.fields
            + self.halos
            + self.materials
            + self.pml
            + self.dispersive
            + self.monitors
            + self.sources
            + self.passes
    }
    /// Category-wise sum.
    pub fn add(&mut self, other: &Allocation) {
        self.fields += other.fields;
        self.halos += other.halos;
        self.materials += other.materials;
        self.pml += other.pml;
        self.dispersive += other.dispersive;
        self.monitors += other.monitors;
        self.sources += other.sources;
        self.passes += other.passes;
    }
}

/// Bytes moved per cell and step by the two-pass update (design.md section 3): read E and H,
/// write H; read E and H, write E (18 field values), plus the three u8 material indices the E
/// update reads. 75 in f32, 147 in f64.
pub fn bytes_per_cell_step(precision: Precision) -> u64 {
    18 * precision.bytes() as u64 + 3
}

/// Bytes moved per cell and step by the fused H+E sweep (the CPU's update where it runs a
/// slab per thread): each of the six field values read and written once (12 values), plus
/// the three u8 material indices. 51 in f32, 99 in f64.
pub fn fused_update_bytes_per_cell_step(precision: Precision) -> u64 {
    12 * precision.bytes() as u64 + 3
}

/// Bytes moved per cell and step by the update of the CPU's fused sweep (`fused`,
/// [`fused_update_bytes_per_cell_step`]) or the two-pass update ([`bytes_per_cell_step`]).
pub fn update_bytes_per_cell_step(precision: Precision, fused: bool) -> u64 {
    if fused {
        fused_update_bytes_per_cell_step(precision)
    } else {
        bytes_per_cell_step(precision)
    }
}

/// Device bytes of a probe ring of `samples` samples and `rows` rows in `real`-byte values:
/// one 8-byte sample address per sample and the ring itself.
pub fn probe_ring_bytes(samples: usize, rows: usize, real: usize) -> u64 {
    (samples * 8 + rows * samples * real) as u64
}

/// Pinned host bytes mirroring a probe ring of `samples` samples and `rows` rows.
pub fn probe_mirror_bytes(samples: usize, rows: usize, real: usize) -> u64 {
    (rows * samples * real) as u64
}

/// Bytes of snapshot staging for `values` values of `real` bytes: the device staging of a GPU
/// (its chunks of every snapshot component) and, for all values of the model, the one pinned
/// buffer they are copied to.
pub fn snapshot_staging_bytes(values: usize, real: usize) -> u64 {
    (values * real) as u64
}

/// Device bytes of the DFT accumulators of `cells` flux plane cells at `nf` frequencies: real
/// and imaginary parts of E_b, E_c, H_b, H_c, f64 each.
pub fn flux_accumulator_bytes(nf: usize, cells: usize) -> u64 {
    (8 * 8 * nf * cells) as u64
}

/// Device bytes of one part of a flux patch in a slab with `cells` cells in `rows` rows at
/// `nf` frequencies: its accumulators ([`flux_accumulator_bytes`]), its cells' quadrature
/// weights (two f64 each) and its spectrum's row sums (four f64 per row and frequency), which
/// `flux_rows` forms so that a spectrum reads back those sums, not the accumulators.
pub fn flux_part_bytes(nf: usize, cells: usize, rows: usize) -> u64 {
    if cells == 0 {
        return 0;
    }
    flux_accumulator_bytes(nf, cells) + (16 * cells) as u64 + (32 * nf * rows) as u64
}

/// Bytes of a slab's TF/SF arrays with `points` correction points and a 1-D grid of `nodes`
/// nodes in `real`-byte values: per point a u32 cell offset, a u32 1-D node, its weight and
/// factor; the slab's copy of the 1-D grid (e and h) when it holds any point.
pub fn tfsf_bytes(points: u64, nodes: u64, real: usize) -> u64 {
    let p = real as u64;
    let grid = if points > 0 { 2 * nodes * p } else { 0 };
    points * (8 + 2 * p) + grid
}

/// Device bytes of a CPML coefficient table of `layers` layers: (b, c, 1/kappa - 1, 1/d) per
/// layer.
pub fn pml_table_bytes(layers: usize, real: usize) -> u64 {
    (4 * layers * real) as u64
}

/// Device bytes of the update's step tables on a grid of `shape`: 1/primal and 1/dual along
/// each axis, one value per index (the operator's `inv_primal`, `inv_dual`), on every GPU.
pub fn step_table_bytes(shape: [usize; 3], real: usize) -> u64 {
    (2 * shape.iter().sum::<usize>() * real) as u64
}

/// Device bytes of the NaN/Inf flag on each GPU.
pub const FINITE_FLAG_BYTES: u64 = 4;

/// Pinned host bytes of one staged halo copy (between GPUs without peer access): one plane of
/// `plane` values.
pub fn staged_halo_bytes(plane: usize, real: usize) -> u64 {
    (plane * real) as u64
}

/// Where the CUDA engine's monitor buffers lie along x, so that each slab's share of them can
/// be counted on its GPU (the probe samples, snapshot chunks and flux plane cells inside the
/// slab) without the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MonitorLayout {
    /// Owned x plane of every probe sample.
    pub probe_x: Vec<usize>,
    /// Rows of the probe ring.
    pub probe_rows: usize,
    /// Every snapshot component's region: (first x, x stride, x samples, values per x sample).
    pub snapshots: Vec<(usize, usize, usize, usize)>,
    /// Every patch of every surface DFT monitor (a flux plane, a flux or far-field box's
    /// faces): (normal axis, plane index, frequencies, first x cell, x cells, cells per x plane
    /// for a patch along x (its whole area for an x-normal patch), rows of the patch per x
    /// plane (its rows along the first in-plane axis: 1 for a patch along x, whose rows are
    /// its x cells; all of them for an x-normal patch)).
    pub fluxes: Vec<(usize, usize, usize, usize, usize, usize, usize)>,
}

impl MonitorLayout {
    /// The monitor layout of `model` as resolved.
    pub fn of(model: &Model) -> MonitorLayout {
        MonitorLayout {
            probe_x: model
                .every_probe()
                .flat_map(|p| p.samples.iter().map(|(_, idx)| idx[0]))
                .collect(),
            probe_rows: probe_ring_rows(model.grid.steps),
            snapshots: model
                .snapshots
                .iter()
                .flat_map(|s| s.regions.iter())
                .map(|(_, r)| {
                    let [cx, cy, cz] = r.counts();
                    (r.start[0], r.stride[0], cx, cy * cz)
                })
                .collect(),
            fluxes: model
                .fluxes
                .iter()
                .flat_map(|f| {
                    f.patches.iter().map(|p| {
                        let a = p.axis as usize;
                        let per_x = if a == 0 { p.cells() } else { p.count[1] };
                        let (x0, cx, rows) = if a == 0 {
                            (p.index, 1, p.count[0])
                        } else {
                            (p.start[0], p.count[0], 1)
                        };
                        (a, p.index, f.frequencies.len(), x0, cx, per_x, rows)
                    })
                })
                .collect(),
        }
    }

    /// The same monitors on a grid of `nx` planes where there were `from` (the planner's
    /// coarser variants): x positions scaled, counts kept (an overestimate, on the safe side).
    fn rescaled(&self, from: usize, nx: usize) -> MonitorLayout {
        let x = |v: usize| (v * nx / from.max(1)).min(nx.saturating_sub(1));
        MonitorLayout {
            probe_x: self.probe_x.iter().map(|&v| x(v)).collect(),
            probe_rows: self.probe_rows,
            snapshots: self
                .snapshots
                .iter()
                .map(|&(x0, sx, cx, per)| (x(x0), sx, cx, per))
                .collect(),
            fluxes: self
                .fluxes
                .iter()
                .map(|&(a, k, nf, x0, cx, per, rows)| {
                    (a, if a == 0 { x(k) } else { k }, nf, x(x0), cx, per, rows)
                })
                .collect(),
        }
    }

    /// Probe samples in `range`.
    pub fn probe_samples(&self, range: SlabRange) -> usize {
        self.probe_x
            .iter()
            .filter(|&&x| range.x0 <= x && x < range.x1)
            .count()
    }

    /// Snapshot values gathered from `range` (its chunks of every component).
    pub fn snapshot_values(&self, range: SlabRange) -> usize {
        self.snapshots
            .iter()
            .map(|&(x0, sx, cx, per)| {
                (0..cx)
                    .filter(|i| (range.x0..range.x1).contains(&(x0 + i * sx)))
                    .count()
                    * per
            })
            .sum()
    }

    /// Snapshot values of the whole model (the pinned buffer).
    pub fn all_snapshot_values(&self) -> usize {
        self.snapshots.iter().map(|&(_, _, cx, per)| cx * per).sum()
    }

    /// Surface DFT bytes of the patch cells in `range` on the CUDA engine: their
    /// accumulators, quadrature weights and row sums ([`flux_part_bytes`]; each sample's
    /// weights travel in the launch arguments).
    pub fn flux_bytes(&self, range: SlabRange) -> u64 {
        self.fluxes
            .iter()
            .map(|&(_, _, nf, x0, cx, per, rows)| {
                let lo = x0.max(range.x0);
                let hi = (x0 + cx).min(range.x1);
                let xs = hi.saturating_sub(lo);
                flux_part_bytes(nf, xs * per, xs * rows)
            })
            .sum()
    }

    /// What the CUDA engine holds on the GPU of the slab owning `range` for monitors: its
    /// probe samples' ring, its snapshot chunks' staging and its flux plane cells'
    /// accumulators.
    pub fn device_bytes(&self, range: SlabRange, real: usize) -> u64 {
        probe_ring_bytes(self.probe_samples(range), self.probe_rows, real)
            + snapshot_staging_bytes(self.snapshot_values(range), real)
            + self.flux_bytes(range)
    }

    /// The CUDA engine's pinned host mirrors: the probe ring's and the snapshot buffer.
    pub fn pinned_bytes(&self, real: usize) -> u64 {
        probe_mirror_bytes(self.probe_x.len(), self.probe_rows, real)
            + snapshot_staging_bytes(self.all_snapshot_values(), real)
    }

    /// [`MonitorLayout::pinned_bytes`] of a process holding the slabs `ranges` (one rank of a
    /// run over MPI ranks): the probe ring's mirror of the samples in them (a rank's local
    /// model keeps the lumped terminals whole, while the rank reads only their samples on its
    /// own planes), and the snapshot buffer. The same for one process holding every plane.
    pub fn pinned_bytes_in(&self, ranges: &[SlabRange], real: usize) -> u64 {
        let samples = ranges.iter().map(|r| self.probe_samples(*r)).sum();
        probe_mirror_bytes(samples, self.probe_rows, real)
            + snapshot_staging_bytes(self.all_snapshot_values(), real)
    }

    /// Cells of every surface DFT patch.
    pub fn flux_cells(&self) -> u64 {
        self.fluxes
            .iter()
            .map(|&(_, _, _, _, cx, per, _)| (cx * per) as u64)
            .sum()
    }

    /// The largest snapshot region (values): the host copy the CUDA engine hands the writer.
    pub fn largest_region(&self) -> usize {
        self.snapshots
            .iter()
            .map(|&(_, _, cx, per)| cx * per)
            .max()
            .unwrap_or(0)
    }
}

/// Most rows the CUDA engine's probe ring holds (the time loop collects them as they arrive).
pub const PROBE_RING_ROWS: usize = 4096;

/// Rows of the probe ring for a run of `steps` steps: [`PROBE_RING_ROWS`], or the step count
/// when smaller.
pub fn probe_ring_rows(steps: usize) -> usize {
    steps.clamp(1, PROBE_RING_ROWS)
}

/// The array lengths of one slab ([`Layout::slab_lengths`]), in values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlabLengths {
    /// Values per field component with halos: (n + 2) ny nz.
    pub field_len: usize,
    /// Material ids per E component: n ny nz.
    pub mat_len: usize,
    /// Owned planes inside the x PML.
    pub x_planes: usize,
    /// Values per psi array along x, y, z.
    pub psi_len: [usize; 3],
}

/// Where along x the passes that launch kernels of their own act (the CUDA engine launches
/// each pass's kernels per slab, so a small grid's step costs as much in launches as in
/// memory traffic): what [`Layout::gpu_launches_per_step`] counts from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LaunchLayout {
    /// Global x cells [x0, x1) of each electric current sheet (one launch each in the E half
    /// step of a slab it touches).
    pub sheets: Vec<(usize, usize)>,
    /// Likewise for the magnetic sheets of one-way plane waves (H half step).
    pub magnetic_sheets: Vec<(usize, usize)>,
    /// Per group of the dispersive pass (E component, material with poles), the x planes that
    /// hold its cells (one launch per slab part they meet).
    pub dispersive: Vec<(usize, usize)>,
    /// The TF/SF source's correction groups, E and H (one launch each in a slab with points).
    pub tfsf_groups: [usize; 2],
    /// Minimum faces whose tangential E the PEC pass zeroes (PEC, and the PEC behind a PML).
    pub zero_min_face: [bool; 3],
    /// Halo copies even on one slab: a periodic x minimum (H, the last plane wrapped into the
    /// first slab), a PMC x minimum (H, the first plane mirrored), a periodic x maximum (E).
    pub x_face_copies: [bool; 3],
    /// The surface ports' launches, when the model has any.
    pub ports: Option<PortLaunches>,
}

/// The surface ports' launches per step ([`crate::model::SurfacePorts`], on the GPU of every
/// slab), all on the slab of the first edge: `port_increment`, one `port_drive` per
/// [`crate::model::PORT_MODELS_PER_LAUNCH`] models, `port_poles` (when some model has poles)
/// and `port_gather`. They also keep the E half step from being split into boundary and
/// interior planes. `port_poles` takes each of its runs (a model with poles and a slab its
/// ports' own edges lie in) as a group's arguments in device memory
/// ([`gpu_port_run_bytes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortLaunches {
    /// The global x plane of the first edge.
    pub first: usize,
    /// The launches.
    pub fixed: u64,
    /// Per model with poles, the sorted x planes of its ports' own edges.
    pub pole_planes: Vec<Vec<usize>>,
}

/// Bytes of one run's arguments of `port_poles` on the GPU: the dispersive kernel's argument
/// struct (`DispersiveArgs` of `kernels/common.cuh`, with 3 series parts and 16 poles), for
/// values of `real` bytes.
pub fn gpu_port_run_bytes(real: usize) -> u64 {
    let r = real as u64;
    64 + 2 * r + 3 * (8 + 4 * r) + 2 * crate::model::MAX_POLES as u64 * (8 + 6 * r)
}

impl PortLaunches {
    /// The launches of `model`'s surface ports; None without.
    fn of(model: &Model) -> Option<PortLaunches> {
        let ports = model.surface_ports();
        let first = ports.edges.first()?.cell[0] as usize;
        let models = ports.model_planes();
        let table = &model.materials.materials;
        let pole_planes: Vec<Vec<usize>> = models
            .iter()
            .filter(|(m, _)| table[*m as usize].pole_state_len() > 0)
            .map(|(_, planes)| planes.clone())
            .collect();
        Some(PortLaunches {
            first,
            fixed: 2
                + models.len().div_ceil(crate::model::PORT_MODELS_PER_LAUNCH) as u64
                + !pole_planes.is_empty() as u64,
            pole_planes,
        })
    }

    /// Launches per step on the slab that owns `range`.
    fn on(&self, range: SlabRange) -> u64 {
        (range.x0 <= self.first && self.first < range.x1) as u64 * self.fixed
    }

    /// The runs of `port_poles` whose ports' own edges lie in `range`.
    pub fn pole_runs(&self, range: SlabRange) -> u64 {
        let inside = |x: &usize| range.x0 <= *x && *x < range.x1;
        self.pole_planes
            .iter()
            .filter(|p| p.iter().any(inside))
            .count() as u64
    }

    /// The same on a grid of `nx` planes where there were `from`, by `x` (x positions scaled).
    fn rescaled(&self, x: impl Fn(usize) -> usize) -> PortLaunches {
        PortLaunches {
            first: x(self.first),
            fixed: self.fixed,
            pole_planes: self
                .pole_planes
                .iter()
                .map(|p| {
                    let mut p: Vec<usize> = p.iter().map(|&v| x(v)).collect();
                    p.dedup();
                    p
                })
                .collect(),
        }
    }
}

impl LaunchLayout {
    /// The launch layout of `model`.
    pub fn of(model: &Model) -> LaunchLayout {
        let x_span = |cells: &[[usize; 2]; 3]| (cells[0][0], cells[0][1]);
        // Where each group of the dispersive pass (E component, material with poles, the
        // smoothing's mixtures with poles among them) has cells: one launch per group and
        // slab part it meets.
        let dispersive = model
            .dispersive_counts()
            .groups
            .iter()
            .map(|&(_, _, [a, b])| (a, b))
            .collect();
        LaunchLayout {
            sheets: model.sources.iter().map(|s| x_span(&s.cells)).collect(),
            magnetic_sheets: model
                .sources
                .iter()
                .filter_map(|s| s.magnetic.as_ref().map(|m| x_span(&m.cells)))
                .collect(),
            dispersive,
            tfsf_groups: model.tfsf.as_ref().map_or([0, 0], |t| t.group_counts()),
            zero_min_face: [0, 1, 2].map(|a| model.boundaries.faces[a][0].zeroes_tangential_e()),
            x_face_copies: [
                model.boundaries.face(Axis::X, false) == BoundaryKind::Periodic,
                model.boundaries.face(Axis::X, false) == BoundaryKind::Pmc,
                model.boundaries.face(Axis::X, true) == BoundaryKind::Periodic,
            ],
            ports: PortLaunches::of(model),
        }
    }

    /// The same on a grid of `nx` planes where there were `from` (x positions scaled).
    fn rescaled(&self, from: usize, nx: usize) -> LaunchLayout {
        let x = |v: usize| (v * nx / from.max(1)).min(nx);
        let span = |&(a, b): &(usize, usize)| (x(a), x(b).max(x(a) + 1).min(nx.max(1)));
        LaunchLayout {
            sheets: self.sheets.iter().map(span).collect(),
            magnetic_sheets: self.magnetic_sheets.iter().map(span).collect(),
            dispersive: self.dispersive.iter().map(span).collect(),
            ports: self
                .ports
                .as_ref()
                .map(|p| p.rescaled(|v| x(v).min(nx - 1))),
            ..self.clone()
        }
    }
}

/// The facts about a model that its byte counts depend on, so that hypothetical variants (a
/// coarser cell, another precision) are counted by the same formulas.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Cells along x, y, z.
    pub shape: [usize; 3],
    /// CPML layers (low side, high side) along x, y, z.
    pub pml: [(usize, usize); 3],
    /// Field precision.
    pub precision: Precision,
    /// Values in the snapshot staging buffer (the largest region of any snapshot component).
    pub staging_values: u64,
    /// Bytes of the flux monitors' DFT accumulators and scratch (host, f64).
    pub flux_bytes: u64,
    /// Values the HDF5 writer keeps per step for the probe series (one per probe component,
    /// plus the shared time axis when there are probes).
    pub probe_values_per_step: u64,
    /// Time steps.
    pub steps: u64,
    /// Where the CUDA engine's monitor buffers lie.
    pub monitors: std::sync::Arc<MonitorLayout>,
    /// Periodic x faces (min, max): the halo copies that wrap round from one end to the other.
    pub periodic_x: [bool; 2],
    /// Some material is magnetic: H components get material ids too.
    pub magnetic: bool,
    /// Per global x plane, the dispersive pass's (cells, state values) (empty without
    /// dispersive materials; see [`Model::dispersive_counts`]).
    pub dispersive_planes: std::sync::Arc<Vec<(u64, u64)>>,
    /// Per global x plane, the TF/SF correction points (empty without a TF/SF source; see
    /// [`crate::model::Tfsf::plane_counts`]).
    pub tfsf_planes: std::sync::Arc<Vec<u64>>,
    /// Nodes of the TF/SF source's 1-D incident grid (0 without one).
    pub tfsf_nodes: u64,
    /// Per global x plane, the conformal PEC pass's cut faces (empty without any; see
    /// [`Model::conformal`]).
    pub conformal_planes: std::sync::Arc<Vec<u64>>,
    /// Per global x plane, the mode sources' weights there (values, electric and magnetic
    /// sheets: [`Model::sheet_weight_values`]; empty without mode sources).
    pub sheet_weight_planes: std::sync::Arc<Vec<u64>>,
    /// What the CUDA engine's kernel launches per step depend on
    /// ([`Layout::gpu_launches_per_step`]).
    pub launches: std::sync::Arc<LaunchLayout>,
    /// The model's cell passes, as their state and traffic depend on them.
    pub cell_passes: std::sync::Arc<Vec<CellPassLayout>>,
    /// Field sets the engine steps: 2 for a Bloch cell (the real and the imaginary set, each
    /// a whole engine: [`crate::backend::bloch`]), else 1. Every slab's bytes and traffic
    /// count once per set.
    pub field_sets: u64,
    /// The axes with a Bloch phase ([`crate::model::Boundaries::bloch_phase`]).
    pub bloch_axes: [bool; 3],
    /// Per global x plane, what the surface ports hold there
    /// ([`crate::model::SurfacePorts::plane_counts`]); None without surface ports.
    pub surface_ports: Option<std::sync::Arc<Vec<crate::model::PortCounts>>>,
    /// The surface ports themselves, for what they trade between GPUs
    /// ([`Layout::gpu_port_trades`]); None without, and in a layout rescaled to another grid
    /// (whose trades are not counted).
    pub port_surface: Option<std::sync::Arc<crate::model::SurfacePorts>>,
}

/// [`Layout::surface_ports`] of `model`: None without surface ports.
fn port_planes(model: &Model) -> Option<std::sync::Arc<Vec<crate::model::PortCounts>>> {
    let ports = model.surface_ports();
    if ports.is_empty() {
        return None;
    }
    let table = &model.materials.materials;
    Some(std::sync::Arc::new(
        ports.plane_counts(model.grid.shape[0], |m| table[m as usize].pole_state_len()),
    ))
}

/// Bytes a backend holds per conformal PEC cut face: a u32 cell offset and four weights.
pub fn conformal_face_bytes(real: usize) -> u64 {
    4 + 4 * real as u64
}

/// The conformal PEC pass's cut faces per global x plane, all three H components together
/// (empty without any): exact while the surfaces' box is small, else from sampled planes
/// ([`Model::conformal_estimate`]).
fn conformal_planes(model: &Model) -> Vec<u64> {
    model.conformal_estimate().x_planes.clone()
}

/// Per global x plane, the values of the mode sources' weights ([`Layout::sheet_weight_planes`]).
fn sheet_weight_planes(model: &Model) -> Vec<u64> {
    if model
        .sources
        .iter()
        .all(|s| s.mode.is_none() && s.transverse_k.is_none())
    {
        return Vec::new();
    }
    (0..model.grid.shape[0])
        .map(|x| model.sheet_weight_values(x, x + 1))
        .collect()
}

/// What a cell pass ([`crate::model::CellPass`]) declares that the plan counts: the plan
/// sums these, so a new cell pass needs no formula here.
#[derive(Debug, Clone, PartialEq)]
pub struct CellPassLayout {
    /// Its cells, [start, end) along x, y, z.
    pub cells: [[usize; 2]; 3],
    /// State values per cell.
    pub slots: usize,
    /// Bytes it moves per cell and step besides its state, in f32 and in f64.
    pub field_bytes: [u64; 2],
    /// It updates an E component (it runs in the E half step), else an H one.
    pub electric: bool,
    /// Its device form's coefficient values per cell ([`crate::model::CellPass::kernel`]),
    /// `None` without one (the pass runs on the CPU only).
    pub kernel_values: Option<usize>,
}

impl CellPassLayout {
    /// The cell passes of `model`.
    fn of(model: &Model) -> Vec<CellPassLayout> {
        model
            .cell_passes
            .iter()
            .map(|p| CellPassLayout {
                cells: p.cells(),
                slots: p.slots(),
                field_bytes: [4, 8].map(|real| p.field_bytes_per_cell(real)),
                electric: p.component().is_electric(),
                kernel_values: p.kernel().map(|k| k.values_per_cell()),
            })
            .collect()
    }

    /// Its cells within global x `range`.
    fn cells_in(&self, range: SlabRange) -> u64 {
        crate::model::cells_within(self.cells, range.x0, range.x1).0 as u64
    }

    /// The same on a grid of `shape` cells where there were `from` (each axis scaled).
    fn rescaled(&self, from: [usize; 3], shape: [usize; 3]) -> CellPassLayout {
        let cells = [0, 1, 2].map(|a| self.cells[a].map(|v| v * shape[a] / from[a].max(1)));
        CellPassLayout {
            cells,
            ..self.clone()
        }
    }
}

impl Layout {
    /// The layout of `model` as resolved.
    pub fn of(model: &Model) -> Layout {
        let profiles = &model.boundaries.profiles;
        Layout {
            shape: model.grid.shape,
            pml: [0, 1, 2].map(|a| (profiles[a].lo, profiles[a].hi)),
            precision: model.precision,
            staging_values: monitor_staging_len(model) as u64,
            // Each field set of a Bloch cell keeps its own DFTs.
            flux_bytes: flux_bytes(model) * (1 + model.boundaries.has_bloch() as u64),
            probe_values_per_step: probe_values_per_step(model),
            steps: model.grid.steps as u64,
            monitors: std::sync::Arc::new(MonitorLayout::of(model)),
            periodic_x: [false, true].map(|high| {
                model.boundaries.face(crate::model::Axis::X, high)
                    == crate::model::BoundaryKind::Periodic
            }),
            magnetic: model.materials.any_magnetic(),
            dispersive_planes: std::sync::Arc::new(model.dispersive_counts().planes.clone()),
            tfsf_planes: std::sync::Arc::new(
                model
                    .tfsf
                    .as_ref()
                    .map_or(Vec::new(), |t| t.plane_counts(&model.grid)),
            ),
            tfsf_nodes: model.tfsf.as_ref().map_or(0, |t| t.nodes as u64),
            conformal_planes: std::sync::Arc::new(conformal_planes(model)),
            sheet_weight_planes: std::sync::Arc::new(sheet_weight_planes(model)),
            launches: std::sync::Arc::new(LaunchLayout::of(model)),
            cell_passes: std::sync::Arc::new(CellPassLayout::of(model)),
            field_sets: 1 + model.boundaries.has_bloch() as u64,
            bloch_axes: [0, 1, 2].map(|a| model.boundaries.bloch_phase(a).is_some()),
            surface_ports: port_planes(model),
            port_surface: Some(model.surface_ports()).filter(|p| !p.is_empty()),
        }
    }

    /// Per GPU (in order of first use by `gpu_of`, each slab's GPU), the surface ports'
    /// launches a step beyond those [`Layout::gpu_launches_per_step`] counts on the slab of
    /// the first edge: over several GPUs, each other GPU that holds ports steps its own (the
    /// same fixed launches), and each GPU that trades packs its values sent twice a step (one
    /// launch each) and copies in what it receives (one copy per GPU beside it it receives
    /// from, twice).
    pub fn gpu_port_extra_launches(&self, ranges: &[SlabRange], gpu_of: &[usize]) -> Vec<u64> {
        let (Some(ports), Some(parts), Some(l)) = (
            &self.port_surface,
            crate::decomp::gpu_planes(ranges, gpu_of),
            &self.launches.ports,
        ) else {
            return Vec::new();
        };
        if parts.len() < 2 {
            return vec![0; parts.len()];
        }
        parts
            .iter()
            .map(|p| {
                // The edges are in x order.
                let before = |x: usize| ports.edges.partition_point(|e| (e.cell[0] as usize) < x);
                let has_edges = before(p.start) < before(p.end);
                let own = if has_edges && !p.contains(&l.first) {
                    l.fixed
                } else {
                    0
                };
                let c = ports.crossings(p.clone());
                let packs = [&c.edges_out, &c.ports_out]
                    .iter()
                    .filter(|o| o.iter().any(|side| !side.is_empty()))
                    .count() as u64;
                let from = |list: &[u32], x: &dyn Fn(u32) -> usize| {
                    let below = list.iter().any(|&i| x(i) < p.start) as u64;
                    let above = list.iter().any(|&i| x(i) >= p.end) as u64;
                    below + above
                };
                let copies = from(&c.edges_in, &|q| ports.edge_x(q))
                    + from(&c.ports_in, &|q| ports.port_x(q));
                own + packs + copies
            })
            .collect()
    }

    /// Per GPU (in order of first use by `gpu_of`, each slab's GPU), the bytes the CUDA
    /// engines' surface ports take on it to trade with the GPUs beside
    /// ([`crate::model::SurfacePorts::gpu_trade_bytes`], once per field set), and the pinned
    /// host bytes the trades stage through without peer access; nothing on one GPU.
    pub fn gpu_port_trades(&self, ranges: &[SlabRange], gpu_of: &[usize]) -> (Vec<u64>, u64) {
        let (Some(ports), Some(parts)) = (
            &self.port_surface,
            crate::decomp::gpu_planes(ranges, gpu_of),
        ) else {
            return (Vec::new(), 0);
        };
        if parts.len() < 2 {
            return (vec![0; parts.len()], 0);
        }
        let real = self.precision.bytes();
        let per_gpu = parts
            .iter()
            .map(|p| self.field_sets * ports.crossings(p.clone()).gpu_bytes(real))
            .collect();
        (
            per_gpu,
            self.field_sets * ports.staged_trade_bytes(&parts, real),
        )
    }

    /// The Bloch pass's images of the slab that owns `range` in the half step that has more
    /// (values, per field set; 0 without a Bloch phase): per Bloch axis, two components' values
    /// next to the face, a plane along x (when the slab holds a face of that axis), a row of
    /// `nz` per owned plane along y, a column of `ny` per owned plane along z
    /// ([`crate::backend::bloch`]).
    pub fn bloch_images(&self, range: SlabRange) -> u64 {
        let [nx, ny, nz] = self.shape.map(|v| v as u64);
        let n = range.len() as u64;
        let holds_face = range.x0 == 0 || range.x1 as u64 == nx;
        let per_axis = [if holds_face { ny * nz } else { 0 }, n * nz, n * ny];
        (0..3)
            .filter(|&a| self.bloch_axes[a])
            .map(|a| 2 * per_axis[a])
            .sum()
    }

    /// The same layout in another precision.
    pub fn with_precision(&self, precision: Precision) -> Layout {
        Layout {
            precision,
            ..self.clone()
        }
    }

    /// The same layout on a grid of `shape` cells and `steps` steps (the planner's coarser
    /// variants): the monitors keep their sizes, at scaled x positions.
    pub fn reshaped(&self, shape: [usize; 3], steps: u64) -> Layout {
        // The dispersive cells scale with the cross-section and move with x like the
        // monitors: an estimate for a grid that is not built.
        let old = &self.dispersive_planes;
        let area = (shape[1] * shape[2]) as f64 / (self.shape[1] * self.shape[2]) as f64;
        let dispersive_planes = if old.is_empty() {
            Vec::new()
        } else {
            (0..shape[0])
                .map(|i| {
                    let (c, v) = old[(i * self.shape[0] / shape[0]).min(old.len() - 1)];
                    ((c as f64 * area) as u64, (v as f64 * area) as u64)
                })
                .collect()
        };
        // The TF/SF points likewise (an estimate: they scale with the box's faces).
        let old = &self.tfsf_planes;
        let tfsf_planes = if old.is_empty() {
            Vec::new()
        } else {
            (0..shape[0])
                .map(|i| {
                    (old[(i * self.shape[0] / shape[0]).min(old.len() - 1)] as f64 * area) as u64
                })
                .collect()
        };
        // The cut faces likewise (they scale with the surfaces, taken as the cross-section).
        let old = &self.conformal_planes;
        let conformal_planes = if old.is_empty() {
            Vec::new()
        } else {
            (0..shape[0])
                .map(|i| {
                    (old[(i * self.shape[0] / shape[0]).min(old.len() - 1)] as f64 * area) as u64
                })
                .collect()
        };
        // The surface ports likewise (they scale with the surfaces).
        let surface_ports = self.surface_ports.as_ref().map(|old| {
            let scale = |v: u64| (v as f64 * area) as u64;
            std::sync::Arc::new(
                (0..shape[0])
                    .map(|i| {
                        let c = old[(i * self.shape[0] / shape[0]).min(old.len() - 1)];
                        crate::model::PortCounts {
                            edges: scale(c.edges),
                            ports: scale(c.ports),
                            stencil_entries: scale(c.stencil_entries),
                            gather_entries: scale(c.gather_entries),
                            pole_ports: scale(c.pole_ports),
                            pole_values: scale(c.pole_values),
                        }
                    })
                    .collect(),
            )
        });
        Layout {
            shape,
            steps,
            surface_ports,
            port_surface: None,
            conformal_planes: std::sync::Arc::new(conformal_planes),
            monitors: std::sync::Arc::new(self.monitors.rescaled(self.shape[0], shape[0])),
            launches: std::sync::Arc::new(self.launches.rescaled(self.shape[0], shape[0])),
            dispersive_planes: std::sync::Arc::new(dispersive_planes),
            tfsf_planes: std::sync::Arc::new(tfsf_planes),
            cell_passes: std::sync::Arc::new(
                self.cell_passes
                    .iter()
                    .map(|p| p.rescaled(self.shape, shape))
                    .collect(),
            ),
            ..self.clone()
        }
    }

    /// Total cells.
    pub fn cells(&self) -> u64 {
        self.shape.iter().map(|&n| n as u64).product()
    }

    /// Bytes of one x plane of one field component.
    pub fn plane_bytes(&self) -> u64 {
        self.shape[1] as u64 * self.shape[2] as u64 * self.precision.bytes() as u64
    }

    /// What a backend allocates for the slab that owns `range`, by category (`monitors` is 0:
    /// no per-slab monitor buffers exist; see [`monitor_staging_len`]).
    ///
    /// - fields: Ex..Hz over the owned planes, 6 n ny nz values;
    /// - halos: one plane on each side of each of the six components, 12 ny nz values;
    /// - materials: a u8 index per owned cell per E component, and a u16 per owned (plane, y)
    ///   row per E component saying whether the row is uniform;
    /// - pml: four psi arrays per axis, over the owned cells inside that axis's layers;
    /// - materials, when some material is magnetic: the same again for the H components; and
    ///   the conformal PEC pass's cut faces ([`conformal_face_bytes`] each);
    /// - dispersive: per dispersive cell a u32 index, E^n and the poles' state;
    /// - sources: the TF/SF correction points of the slab ([`Layout::tfsf_bytes`]) and the mode
    ///   sources' weights there ([`Layout::sheet_weight_bytes`]).
    pub fn slab_bytes(&self, range: SlabRange) -> Allocation {
        let ny = self.shape[1] as u64;
        let p = self.precision.bytes() as u64;
        let n = range.len() as u64;
        let l = self.slab_lengths(range);
        let plane = (self.shape[1] * self.shape[2]) as u64;
        let one = Allocation {
            fields: 6 * (l.field_len as u64 - 2 * plane) * p,
            halos: 6 * 2 * plane * p,
            materials: (1 + self.magnetic as u64) * (3 * l.mat_len as u64 + 3 * 2 * n * ny)
                + self.conformal_faces(range) * conformal_face_bytes(self.precision.bytes()),
            pml: self.psi_bytes(range),
            dispersive: self.dispersive_bytes(range) + self.port_bytes(range),
            monitors: 0,
            sources: self.tfsf_bytes(range) + self.sheet_weight_bytes(range),
            passes: self.cell_pass_bytes(range),
        };
        let mut all = Allocation::default();
        for _ in 0..self.field_sets {
            all.add(&one);
        }
        all
    }

    /// Bytes of the cell passes' state for the slab that owns `range`: per pass, its slots
    /// per cell over its cells in the slab.
    pub fn cell_pass_bytes(&self, range: SlabRange) -> u64 {
        let p = self.precision.bytes() as u64;
        self.cell_passes
            .iter()
            .map(|c| c.cells_in(range) * c.slots as u64 * p)
            .sum()
    }

    /// Values the CUDA engine holds for the cell passes of the slab that owns `range`: per pass,
    /// over its cells in the slab, its state (as on the CPU) and its device form's coefficient
    /// rows, in the run's precision.
    pub fn gpu_cell_pass_values(&self, range: SlabRange) -> u64 {
        self.cell_passes
            .iter()
            .map(|c| c.cells_in(range) * (c.slots + c.kernel_values.unwrap_or(0)) as u64)
            .sum()
    }

    /// True when some cell pass of the model has no device form: the model runs on the CPU
    /// only.
    pub fn cpu_only_cell_passes(&self) -> bool {
        self.cell_passes.iter().any(|c| c.kernel_values.is_none())
    }

    /// Bytes of the TF/SF source's arrays for the slab that owns `range`: per correction
    /// point a u32 cell offset, a u32 1-D node, its weight and its factor, and, when the slab
    /// holds any point, its copy of the 1-D grid (e and h per node). Both backends hold one
    /// copy per such slab.
    pub fn tfsf_bytes(&self, range: SlabRange) -> u64 {
        tfsf_bytes(
            self.tfsf_points(range),
            self.tfsf_nodes,
            self.precision.bytes(),
        )
    }

    /// Bytes of the mode sources' weights in the slab that owns `range`.
    pub fn sheet_weight_bytes(&self, range: SlabRange) -> u64 {
        let planes = &self.sheet_weight_planes;
        let values: u64 = planes
            .get(range.x0..range.x1.min(planes.len()))
            .unwrap_or(&[])
            .iter()
            .sum();
        values * self.precision.bytes() as u64
    }

    /// The conformal PEC pass's cut faces in the slab that owns `range`.
    pub fn conformal_faces(&self, range: SlabRange) -> u64 {
        self.conformal_planes
            .get(range.x0..range.x1.min(self.conformal_planes.len()))
            .unwrap_or(&[])
            .iter()
            .sum()
    }

    /// The TF/SF correction points in the slab that owns `range`.
    pub fn tfsf_points(&self, range: SlabRange) -> u64 {
        self.tfsf_planes
            .get(range.x0..range.x1.min(self.tfsf_planes.len()))
            .unwrap_or(&[])
            .iter()
            .sum()
    }

    /// Bytes the update moves per step over the slab that owns `range`, for the plan's time
    /// estimate: per cell the fused sweep's [`fused_update_bytes_per_cell_step`] (`fused`) or
    /// the two-pass update's [`bytes_per_cell_step`], and the H material ids when some
    /// material is magnetic (3 per cell); every CPML psi value read and written; and what the
    /// other passes move ([`Layout::pass_traffic_per_step`]). The estimate divides this by
    /// the bandwidth.
    pub fn traffic_per_step(&self, range: SlabRange, fused: bool) -> f64 {
        let cells = range.len() as u64 * self.shape[1] as u64 * self.shape[2] as u64;
        let base =
            cells * (update_bytes_per_cell_step(self.precision, fused) + 3 * self.magnetic as u64);
        let one = (base + 2 * self.psi_bytes(range)) as f64 + self.pass_traffic_per_step(range);
        one * self.field_sets as f64
    }

    /// Kernel launches per step the CUDA engine makes for the slab that owns `range`
    /// (src/backend/cuda/engine/passes.rs): per half step the main update, the CPML
    /// corrections (one per x-layer run in the slab, one along y and along z where those axes
    /// have layers), one per current sheet, TF/SF correction group and dispersive group in the
    /// slab, the TF/SF 1-D grid and the PEC faces, one for the conformal PEC pass's cut faces
    /// of all three H components, one per cell pass (in the half step of its component) whose
    /// box meets the slab, and the probe gather when the slab holds probe samples (the
    /// lumped terminals' among them).
    /// Where a half step's halo copies read planes of the slab (another slab beyond its face,
    /// or a periodic or PMC x face), each pass runs on those planes first and on the rest
    /// after: one launch for each of the two that the pass's planes meet.
    /// Snapshot gathers, flux DFTs and NaN checks, every few steps, are not counted; a TF/SF
    /// group is taken to span every plane of the slab that holds points.
    pub fn gpu_launches_per_step(&self, range: SlabRange) -> u64 {
        let l = &self.launches;
        let nx = self.shape[0];
        let [wrap_min, mirror_min, wrap_max] = l.x_face_copies;
        // The planes the copies after H read (the last plane, for the next slab or the wrap to
        // the first; the first, for a PMC mirror) and after E (the first plane).
        let mut after_h = Vec::new();
        if range.x1 < nx || wrap_min {
            after_h.push(range.x1 - 1);
        }
        if mirror_min && range.x0 == 0 && !after_h.contains(&range.x0) {
            after_h.push(range.x0);
        }
        // The surface ports keep the E half step whole: no plane runs apart.
        let after_e: Vec<usize> = (l.ports.is_none() && (range.x0 > 0 || wrap_max))
            .then_some(range.x0)
            .into_iter()
            .collect();
        // Launches of a pass over the x planes [a, b): one per copied plane among them, one
        // for the rest when any are left.
        let launches = |(a, b): (usize, usize), copied: &[usize]| -> u64 {
            let (lo, hi) = (a.max(range.x0), b.min(range.x1));
            if lo >= hi {
                return 0;
            }
            let on = copied.iter().filter(|&&p| lo <= p && p < hi).count();
            on as u64 + (hi - lo > on) as u64
        };
        let all = |spans: &[(usize, usize)], copied: &[usize]| -> u64 {
            spans.iter().map(|&s| launches(s, copied)).sum()
        };
        let slab = (range.x0, range.x1);
        let (xlo, xhi) = self.pml[0];
        let x_runs = [(0, xlo), (nx - xhi.min(nx), nx)];
        let yz = [1, 2]
            .into_iter()
            .filter(|&a| self.pml[a].0 + self.pml[a].1 > 0)
            .count() as u64;
        // A half step's curl pass: the main update, then the CPML corrections.
        let curl = |copied: &[usize]| (1 + yz) * launches(slab, copied) + all(&x_runs, copied);
        // The planes of the slab that hold TF/SF points.
        let points = |x: &usize| self.tfsf_planes.get(*x).is_some_and(|&n| n > 0);
        let tfsf_span = (range.x0..range.x1)
            .find(points)
            .map(|a| (a, (a..range.x1).rfind(points).map_or(a, |b| b + 1)));
        let tfsf = tfsf_span.is_some() as u64;
        let groups =
            |g: usize, copied: &[usize]| tfsf_span.map_or(0, |s| g as u64 * launches(s, copied));
        let [e_groups, h_groups] = l.tfsf_groups;
        // The conformal PEC pass: a launch on each copied plane that holds cut faces, and one
        // on the rest when they hold any (per plane, as the engine picks the faces).
        let cut = &self.conformal_planes;
        let cut = cut.get(range.x0..range.x1.min(cut.len())).unwrap_or(&[]);
        let on = |x: usize| cut.get(x - range.x0).is_some_and(|&n| n > 0);
        let rest = (range.x0..range.x0 + cut.len()).any(|x| on(x) && !after_h.contains(&x));
        let conformal = after_h.iter().filter(|&&p| on(p)).count() as u64 + rest as u64;
        // The cells pass: a launch per cell pass over its box's planes, in its half step.
        let cell_spans = |electric: bool| -> Vec<(usize, usize)> {
            self.cell_passes
                .iter()
                .filter(|c| c.electric == electric)
                .map(|c| (c.cells[0][0], c.cells[0][1]))
                .collect()
        };
        let h_half = curl(&after_h)
            + conformal
            + all(&l.magnetic_sheets, &after_h)
            + tfsf
            + groups(h_groups, &after_h)
            + all(&cell_spans(false), &after_h);
        let pec = if l.zero_min_face[1] || l.zero_min_face[2] {
            launches(slab, &after_e)
        } else {
            (l.zero_min_face[0] && range.x0 == 0) as u64
        };
        let e_half = curl(&after_e)
            + all(&l.sheets, &after_e)
            + tfsf
            + groups(e_groups, &after_e)
            + all(&cell_spans(true), &after_e)
            + all(&l.dispersive, &after_e)
            + pec;
        let probes = (self.monitors.probe_samples(range) > 0) as u64;
        let ports = l.ports.as_ref().map_or(0, |p| p.on(range));
        h_half + e_half + ports + probes
    }

    /// Bytes the passes beyond the curls and the CPML move per step over the slab that owns
    /// `range`: the dispersive pass's, per dispersive cell its u32 index read, E, E^n and the
    /// pole state read and written; the TF/SF pass's, per correction point its offset and
    /// node (u32 each), weight and factor read, the field read and written and two incident
    /// values read; and the surface DFTs' (flux planes and boxes, far-field surfaces), per
    /// face cell and frequency eight f64 accumulators read and written, plus the six field
    /// values each face cell samples; and each cell pass's, per cell its declared field
    /// bytes, its state read and written and, for a pass with a device form, its coefficient
    /// row read (in the run's precision, as a GPU holds it).
    pub fn pass_traffic_per_step(&self, range: SlabRange) -> f64 {
        let p = self.precision.bytes() as u64;
        let dispersive: u64 = self
            .dispersive_planes
            .get(range.x0..range.x1.min(self.dispersive_planes.len()))
            .unwrap_or(&[])
            .iter()
            .map(|&(c, v)| 4 * c + 2 * p * (c + v))
            .sum();
        let tfsf = self.tfsf_points(range) * (8 + 6 * p);
        let surface: u64 = self
            .monitors
            .fluxes
            .iter()
            .map(|&(_, _, nf, x0, cx, per, _)| {
                let cells = ((x0 + cx).min(range.x1)).saturating_sub(x0.max(range.x0)) * per;
                2 * flux_accumulator_bytes(nf, cells) + 6 * p * cells as u64
            })
            .sum();
        let wide = (self.precision == Precision::F64) as usize;
        let cells: u64 = self
            .cell_passes
            .iter()
            .map(|c| {
                let coefficients = c.kernel_values.unwrap_or(0) as u64 * p;
                c.cells_in(range) * (c.field_bytes[wide] + 2 * c.slots as u64 * p + coefficients)
            })
            .sum();
        // A cut face: its offset and four weights, four E values read, its H read and written.
        let conformal = self.conformal_faces(range) * (conformal_face_bytes(p as usize) + 6 * p);
        (dispersive + tfsf + surface + cells + conformal) as f64
    }

    /// Bytes of the CPML psi arrays of the slab that owns `range` (four per axis, over the
    /// owned cells inside that axis's layers).
    pub fn psi_bytes(&self, range: SlabRange) -> u64 {
        let psi: u64 = self
            .slab_lengths(range)
            .psi_len
            .iter()
            .map(|&v| v as u64)
            .sum();
        4 * self.precision.bytes() as u64 * psi
    }

    /// Bytes of the surface ports' arrays for the slab that owns `range` (the ports are
    /// part of the dispersive pass), the same on every backend.
    pub fn port_bytes(&self, range: SlabRange) -> u64 {
        self.port_counts(range).bytes(self.precision.bytes())
    }

    /// The runs of the surface ports' `port_poles` launch on the GPU of the slab that owns
    /// `range` ([`PortLaunches::pole_runs`]).
    pub fn gpu_port_runs(&self, range: SlabRange) -> u64 {
        self.launches
            .ports
            .as_ref()
            .map_or(0, |p| p.pole_runs(range))
    }

    /// What the surface ports hold for the slab that owns `range` (the edges and ports whose
    /// own edge lies in it).
    pub fn port_counts(&self, range: SlabRange) -> crate::model::PortCounts {
        let mut counts = crate::model::PortCounts::default();
        if let Some(planes) = &self.surface_ports {
            for c in planes
                .get(range.x0..range.x1.min(planes.len()))
                .unwrap_or(&[])
            {
                counts.add(c);
            }
        }
        counts
    }

    /// Bytes of the dispersive pass's arrays for the slab that owns `range`.
    pub fn dispersive_bytes(&self, range: SlabRange) -> u64 {
        let p = self.precision.bytes() as u64;
        self.dispersive_planes
            .get(range.x0..range.x1.min(self.dispersive_planes.len()))
            .unwrap_or(&[])
            .iter()
            .map(|&(cells, values)| 4 * cells + p * values)
            .sum()
    }

    /// The array lengths (values) of the slab that owns `range`, the same on both backends:
    /// each field component with its two halo planes, each E component's material indices,
    /// the owned planes inside the x PML, and each psi array along x, y, z (four per axis).
    pub fn slab_lengths(&self, range: SlabRange) -> SlabLengths {
        let [nx, ny, nz] = self.shape;
        let plane = ny * nz;
        let n = range.len();
        let (xlo, xhi) = self.pml[0];
        let overlap = |a: usize, b: usize| b.min(range.x1).saturating_sub(a.max(range.x0));
        let x_planes = overlap(0, xlo) + overlap(nx - xhi, nx);
        let ly = self.pml[1].0 + self.pml[1].1;
        let lz = self.pml[2].0 + self.pml[2].1;
        SlabLengths {
            field_len: (n + 2) * plane,
            mat_len: n * plane,
            x_planes,
            psi_len: [x_planes * plane, n * ly * nz, n * ny * lz],
        }
    }

    /// What the CUDA backend allocates on its GPU for the slab that owns `range`, monitors
    /// excluded: as [`Layout::slab_bytes`] without the per-row material summaries (the GPU
    /// kernels look up every cell's id), with the cell passes' coefficient rows beside
    /// their state ([`Layout::gpu_cell_pass_values`]), and in a Bloch cell each set's images
    /// and the other set's beside them ([`Layout::bloch_images`], counted as halos).
    pub fn gpu_slab_bytes(&self, range: SlabRange) -> Allocation {
        let a = self.slab_bytes(range);
        let p = self.precision.bytes() as u64;
        // Every field set is a whole engine with its own tables (a's categories count each).
        let sets = self.field_sets;
        Allocation {
            // Each field set's images at the Bloch faces and the other set's, on the device.
            halos: a.halos + sets * 2 * self.bloch_images(range) * p,
            materials: sets
                * ((1 + self.magnetic as u64)
                    * 3
                    * range.len() as u64
                    * self.shape[1] as u64
                    * self.shape[2] as u64
                    + self.conformal_faces(range) * conformal_face_bytes(self.precision.bytes())),
            passes: sets * self.gpu_cell_pass_values(range) * p,
            // The surface ports' runs' arguments beside their arrays.
            dispersive: a.dispersive
                + sets * self.gpu_port_runs(range) * gpu_port_run_bytes(p as usize),
            ..a
        }
    }

    /// What the CUDA backend allocates on the GPU of the slab that owns `range`, its monitor
    /// buffers included ([`MonitorLayout::device_bytes`], once per field set).
    pub fn gpu_slab_bytes_with_monitors(&self, range: SlabRange) -> Allocation {
        Allocation {
            // Each engine of a Bloch pair holds the model's monitor buffers.
            monitors: self.field_sets * self.monitors.device_bytes(range, self.precision.bytes()),
            ..self.gpu_slab_bytes(range)
        }
    }

    /// What the CUDA backend keeps on every GPU it uses besides its slabs: the CPML
    /// coefficient tables (E and H, each axis with layers), the update's step tables
    /// ([`step_table_bytes`]) and the NaN/Inf flag: kilobytes (six tables of an axis of 10^4
    /// cells are 80 kB in f32), held within the context reserve
    /// ([`super::CUDA_CONTEXT_RESERVE`]).
    pub fn gpu_table_bytes(&self) -> u64 {
        let real = self.precision.bytes();
        FINITE_FLAG_BYTES
            + step_table_bytes(self.shape, real)
            + self
                .pml
                .iter()
                .map(|&(lo, hi)| 2 * pml_table_bytes(lo + hi, real))
                .sum::<u64>()
    }

    /// Halo copies per step between slabs on different GPUs, slab `s` on GPU `gpu_of[s]`: Hy
    /// and Hz to the right neighbour's left halo and Ey and Ez to the left neighbour's right
    /// halo at every boundary between GPUs, and the two of each wrapping round a periodic x
    /// face when its ends are on different GPUs (as `decomp::HaloPlan` lists them).
    pub fn cross_gpu_copies(&self, gpu_of: &[usize]) -> usize {
        let inner = gpu_of.windows(2).filter(|w| w[0] != w[1]).count();
        let ends_apart = gpu_of.first() != gpu_of.last();
        let wrap = self.periodic_x.iter().filter(|&&p| p && ends_apart).count();
        4 * inner + 2 * wrap
    }

    /// Pinned host bytes of the staged halo copies between GPUs without peer access: one plane
    /// per copy ([`staged_halo_bytes`]).
    pub fn staged_halo_total(&self, gpu_of: &[usize]) -> u64 {
        self.cross_gpu_copies(gpu_of) as u64
            * staged_halo_bytes(self.shape[1] * self.shape[2], self.precision.bytes())
    }

    /// The CUDA backend's pinned host mirrors of its monitor buffers (each engine of a Bloch
    /// pair holds its own).
    pub fn gpu_pinned_bytes(&self) -> u64 {
        self.field_sets * self.monitors.pinned_bytes(self.precision.bytes())
    }

    /// Host bytes a CUDA run keeps for monitors besides the pinned mirrors: the host copy of the
    /// largest snapshot region handed to the writer, and the surface DFT patches' quadrature
    /// weights (two f64 per cell, [`crate::flux::weight_values`]), once per field set.
    pub fn gpu_host_monitor_bytes(&self) -> u64 {
        // The imaginary set of a Bloch pair keeps its own weights (nothing else of it is read).
        self.gpu_engine_host_monitor_bytes() + (self.field_sets - 1) * self.gpu_flux_weight_bytes()
    }

    /// [`Layout::gpu_host_monitor_bytes`] of one CUDA engine (one field set).
    pub fn gpu_engine_host_monitor_bytes(&self) -> u64 {
        snapshot_staging_bytes(self.monitors.largest_region(), self.precision.bytes())
            + self.gpu_flux_weight_bytes()
    }

    /// The flux patches' quadrature weights one CUDA engine keeps on the host (two f64 per
    /// cell, [`crate::flux::weight_values`]).
    pub fn gpu_flux_weight_bytes(&self) -> u64 {
        16 * self.monitors.flux_cells()
    }

    /// Bytes of the snapshot staging buffer.
    pub fn staging_bytes(&self) -> u64 {
        self.staging_values * self.precision.bytes() as u64 + self.flux_bytes
    }

    /// Bytes of the probe series the writer holds by the end of the run (f64 values).
    pub fn probe_series_bytes(&self) -> u64 {
        // Saturating: the step count can be large enough to overflow; "too big" must stay big.
        self.probe_values_per_step
            .saturating_mul(self.steps)
            .saturating_mul(8)
    }
}

/// What a backend allocates for the slab of `model` that owns `range`, in `precision`.
pub fn slab_bytes(model: &Model, range: SlabRange, precision: Precision) -> Allocation {
    Layout::of(model)
        .with_precision(precision)
        .slab_bytes(range)
}

/// Values in the host staging buffers, in the field precision: the snapshot gather buffer (the
/// largest region of any snapshot component, 0 without snapshots; the time loop writes each
/// queued component before the next is gathered on the CPU, so one buffer serves them all)
/// plus the flux planes' gather buffer (the largest flux plane, 0 without flux monitors) and
/// the copy of a flux sample's planes that a sweep reads ([`crate::flux::sweep_read_len`]).
/// They are the `monitors` category with [`flux_bytes`]; `tests/plan_alloc.rs` compares them
/// with the CPU backend's buffers after a run.
pub fn monitor_staging_len(model: &Model) -> usize {
    model
        .snapshots
        .iter()
        .flat_map(|s| s.regions.iter().map(|(_, r)| r.len()))
        .max()
        .unwrap_or(0)
        + crate::flux::largest_plane(model)
        + crate::flux::sweep_read_len(model)
}

/// Bytes the time loop holds for monitors in `precision`: the staging buffer plus the flux
/// monitors' host buffers ([`flux_bytes`]).
pub fn monitor_staging_bytes(model: &Model, precision: Precision) -> u64 {
    monitor_staging_len(model) as u64 * precision.bytes() as u64 + flux_bytes(model)
}

/// Bytes of the flux monitors' host buffers (f64): DFT accumulators, quadrature weights, the
/// samples waiting to be added ([`crate::flux::sample_values`]) and one plane of gather
/// scratch.
pub fn flux_bytes(model: &Model) -> u64 {
    if model.fluxes.is_empty() {
        return 0;
    }
    8 * (crate::flux::accumulator_values(model)
        + crate::flux::weight_values(model)
        + crate::flux::sample_values(model)
        + crate::flux::largest_plane(model) as u64)
}

fn probe_values_per_step(model: &Model) -> u64 {
    let samples: usize = model.every_probe().map(|p| p.components.len()).sum();
    if samples == 0 {
        0
    } else {
        samples as u64 + 1
    }
}

/// Bytes of the probe time series the HDF5 writer keeps in memory by the end of the run: one
/// f64 per probe component per step, plus the time axis.
pub fn probe_series_bytes(model: &Model) -> u64 {
    Layout::of(model).probe_series_bytes()
}

/// What the result file holds by the end of the run, by part: the data written, in whole
/// chunks where the datasets grow (HDF5's own metadata, the attributes and the scene text add
/// some tens of kB). The sizes of the datasets
/// `crate::output` creates: snapshots and probe values in the field precision, their time axes
/// in f64 (and u64 step numbers for snapshots), flux spectra and DFT fields in f64.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct OutputBytes {
    /// `/snapshots`: every snapshot of every component, with its time and step.
    pub snapshots: u64,
    /// `/probes`, `/ports` and `/elements`: one value per probe component (a terminal's voltage
    /// and current) per step, and each series' time axis.
    pub probes: u64,
    /// `/flux` and `/far_field`: frequencies and power, the DFT fields of monitors with `fields
    /// = true`; far-field patterns and their surface DFTs.
    pub flux: u64,
    /// The sum.
    pub total: u64,
}

/// The size of the result file of `model` (saturating: an absurd run reads as huge).
pub fn output_bytes(model: &Model) -> OutputBytes {
    let p = model.precision.bytes() as u64;
    let steps = model.grid.steps as u64;
    // Growable datasets take whole chunks: the writer's chunks are 4096 values for probe
    // series and 256 for snapshot times and steps (each snapshot is a chunk of its own).
    let chunked = |n: u64, chunk: u64| n.div_ceil(chunk).saturating_mul(chunk);
    let snapshots = model
        .snapshots
        .iter()
        .map(|s| {
            let taken = steps / s.every.max(1) as u64;
            let values: u64 = s.regions.iter().map(|(_, r)| r.len() as u64).sum();
            taken
                .saturating_mul(values.saturating_mul(p))
                .saturating_add(chunked(taken, 256).saturating_mul(16))
        })
        .fold(0, u64::saturating_add);
    let probes = model
        .every_probe()
        .map(|pr| chunked(steps, 4096).saturating_mul(pr.components.len() as u64 * p + 8))
        .fold(0, u64::saturating_add);
    let flux = model
        .fluxes
        .iter()
        .map(|f| {
            let n = f.frequencies.len() as u64;
            let cells = crate::flux::flux_cells(f) as u64;
            // Surface DFTs: four complex (2 x f64) components per cell, with fields and always
            // for a far field.
            let surface = if f.fields || f.far_field.is_some() {
                4 * 16 * n * cells
            } else {
                0
            };
            match &f.far_field {
                // frequency and power.
                None => 16 * n + surface,
                // frequency, theta, phi; E_theta, E_phi (complex) and intensity per angle.
                Some(ff) => {
                    let (nt, np) = (ff.theta.len() as u64, ff.phi.len() as u64);
                    8 * (n + nt + np) + 40 * n * nt * np + surface
                }
            }
        })
        .fold(0, u64::saturating_add);
    // A scan stores every probe series and spectrum once per trace ([traces, steps],
    // [traces, frequencies]); its probes' positions are [traces, 3] f64.
    let (probes, flux) = match &model.scan {
        Some(scan) => {
            let t = scan.traces as u64;
            (
                probes
                    .saturating_mul(t)
                    .saturating_add(24 * t * model.probes.len() as u64),
                flux.saturating_mul(t),
            )
        }
        None => (probes, flux),
    };
    OutputBytes {
        snapshots,
        probes,
        flux,
        total: snapshots.saturating_add(probes).saturating_add(flux),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(shape: [usize; 3], pml: usize) -> Layout {
        Layout {
            shape,
            pml: [(pml, pml); 3],
            precision: Precision::F32,
            staging_values: 0,
            flux_bytes: 0,
            probe_values_per_step: 0,
            steps: 1,
            monitors: Default::default(),
            periodic_x: [false; 2],
            magnetic: false,
            dispersive_planes: Default::default(),
            tfsf_planes: Default::default(),
            tfsf_nodes: 0,
            conformal_planes: Default::default(),
            sheet_weight_planes: Default::default(),
            launches: Default::default(),
            cell_passes: Default::default(),
            field_sets: 1,
            bloch_axes: [false; 3],
            surface_ports: None,
            port_surface: None,
        }
    }

    #[test]
    fn bytes_per_cell_step_follow_the_design() {
        assert_eq!(bytes_per_cell_step(Precision::F32), 72 + 3);
        assert_eq!(bytes_per_cell_step(Precision::F64), 144 + 3);
    }

    #[test]
    fn fields_of_the_published_example() {
        let l = layout([2000; 3], 10);
        let a = l.slab_bytes(SlabRange { x0: 0, x1: 2000 });
        assert_eq!(a.fields, 192_000_000_000);
        assert_eq!(a.halos, 12 * 4_000_000 * 4);
        assert_eq!(a.materials, 3 * 8_000_000_000 + 6 * 2000 * 2000);
        // 20 x planes, 20 y layers, 20 z layers: three slices of 20 * 4e6 cells, 4 psi each.
        assert_eq!(a.pml, 3 * 4 * 4 * 20 * 4_000_000);
    }

    #[test]
    fn slabs_add_up_to_the_whole_except_halos() {
        let l = layout([37, 11, 13], 4);
        let whole = l.slab_bytes(SlabRange { x0: 0, x1: 37 });
        let parts = crate::decomp::split_even(37, 5);
        let mut sum = Allocation::default();
        for r in &parts {
            sum.add(&l.slab_bytes(*r));
        }
        assert_eq!(sum.fields, whole.fields);
        assert_eq!(sum.materials, whole.materials);
        assert_eq!(sum.pml, whole.pml);
        assert_eq!(sum.halos, 5 * whole.halos);
    }

    /// The time estimate's traffic counts every CPML psi value of the slab read and written
    /// once a step: twice the psi arrays' bytes, on top of the cells' update.
    #[test]
    fn traffic_counts_the_psi_arrays_read_and_written() {
        let with = layout([20, 12, 10], 3);
        let without = layout([20, 12, 10], 0);
        for range in [SlabRange { x0: 0, x1: 20 }, SlabRange { x0: 2, x1: 9 }] {
            let psi = with.slab_bytes(range).pml;
            assert!(psi > 0);
            for fused in [false, true] {
                assert_eq!(
                    with.traffic_per_step(range, fused) - without.traffic_per_step(range, fused),
                    (2 * psi) as f64,
                    "{range:?}, fused {fused}"
                );
            }
        }
    }

    /// A cell pass with a device form: its coefficient rows beside its state on a GPU (the CPU
    /// holds the state alone), one launch per slab part of its box in its half step (two where
    /// the slab's first plane, which the E halo copies read, cuts it), and its rows read in the
    /// traffic; one without a device form keeps the model on the CPU.
    #[test]
    fn a_cell_pass_with_a_kernel_counts_its_rows_and_launches_on_a_gpu() {
        let bare = layout([10, 4, 4], 0);
        let mut l = bare.clone();
        // An E pass of 3 slots over x planes 4..7, 2 x 2 cells per plane.
        let pass = CellPassLayout {
            cells: [[4, 7], [1, 3], [0, 2]],
            slots: 3,
            field_bytes: [8, 16],
            electric: true,
            kernel_values: Some(8),
        };
        l.cell_passes = std::sync::Arc::new(vec![pass.clone()]);
        assert!(!l.cpu_only_cell_passes());
        let whole = SlabRange { x0: 0, x1: 10 };
        assert_eq!(l.slab_bytes(whole).passes, 12 * 3 * 4);
        assert_eq!(l.gpu_slab_bytes(whole).passes, 12 * (3 + 8) * 4);
        assert_eq!(
            l.gpu_launches_per_step(whole),
            bare.gpu_launches_per_step(whole) + 1
        );
        // Two slabs cut at plane 5: the second's first plane is copied after E.
        let (left, right) = (SlabRange { x0: 0, x1: 5 }, SlabRange { x0: 5, x1: 10 });
        assert_eq!(
            l.gpu_launches_per_step(left) - bare.gpu_launches_per_step(left),
            1
        );
        assert_eq!(
            l.gpu_launches_per_step(right) - bare.gpu_launches_per_step(right),
            2
        );
        assert_eq!(
            l.gpu_slab_bytes(left).passes + l.gpu_slab_bytes(right).passes,
            12 * (3 + 8) * 4
        );
        assert_eq!(
            l.traffic_per_step(whole, false) - bare.traffic_per_step(whole, false),
            (12 * (8 + 2 * 3 * 4 + 8 * 4)) as f64
        );
        l.cell_passes = std::sync::Arc::new(vec![
            pass,
            CellPassLayout {
                kernel_values: None,
                ..l.cell_passes[0].clone()
            },
        ]);
        assert!(l.cpu_only_cell_passes());
    }

    /// The time estimate's traffic counts the TF/SF points and the surface DFTs of the slab,
    /// each split at the slab's x range.
    #[test]
    fn traffic_counts_tfsf_points_and_surface_dfts() {
        let bare = layout([10, 4, 4], 0);
        let whole = SlabRange { x0: 0, x1: 10 };
        let base = bare.traffic_per_step(whole, false);
        assert_eq!(base, (160 * 75) as f64);
        assert_eq!(bare.traffic_per_step(whole, true), (160 * 51) as f64);
        let mut l = bare.clone();
        // 3 points on plane 2, 5 on plane 7.
        l.tfsf_planes = std::sync::Arc::new(vec![0, 0, 3, 0, 0, 0, 0, 5, 0, 0]);
        // An x-normal patch on plane 4 (16 cells) and a z-normal one over x 3..9 (4 cells
        // per x plane), 2 and 5 frequencies.
        l.monitors = std::sync::Arc::new(MonitorLayout {
            fluxes: vec![(0, 4, 2, 4, 1, 16, 4), (2, 1, 5, 3, 6, 4, 1)],
            ..Default::default()
        });
        let per_point = 8 + 6 * 4;
        let dft = |nf: u64, cells: u64| (2 * 64 * nf * cells + 24 * cells) as f64;
        assert_eq!(
            l.traffic_per_step(whole, false) - base,
            (8 * per_point) as f64 + dft(2, 16) + dft(5, 24)
        );
        let lower = SlabRange { x0: 0, x1: 5 };
        assert_eq!(
            l.traffic_per_step(lower, false) - bare.traffic_per_step(lower, false),
            (3 * per_point) as f64 + dft(2, 16) + dft(5, 8)
        );
    }
}

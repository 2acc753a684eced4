//! The resolved simulation: everything on grid cells, in SI units, ready to allocate and step.
//!
//! A [`Model`] is built from a scene by [`crate::scene::resolve`] and never refers back to the
//! file. Coefficients are computed here once; backends only copy them.

mod cell_pass;
mod column;
mod conformal;
mod dispersion;
mod faces;
mod geometry;
mod grid;
pub mod library;
mod lumped;
mod materials;
pub mod mesh;
mod modes;
mod monitors;
mod pml;
mod ports;
pub mod prism;
mod scan;
mod smoothing;
mod sources;
mod space;
mod tfsf;
mod thin;
pub mod trimesh;
pub mod voxels;

pub use cell_pass::{cells_within, CellKernel, CellPass, CellPlane, CellPlaneOf, LumpedKernel};
pub use conformal::{
    Conformal, ConformalEstimate, ConformalSummary, CutFace, CONFORMAL_COURANT, DEFAULT_COURANT,
    EXACT_CONFORMAL_CELLS,
};
pub use dispersion::{pole_omega_dt, AdeMaterial, AdePole, Pole, MAX_POLES, MAX_POLE_OMEGA_DT};
pub use faces::{BoundaryKind, PmlParams};
pub use geometry::{Object, Shape};
pub use grid::{Component, Face, Grid, Precision};
pub use lumped::{
    transverse, EdgeBox, LumpedElement, Rlc, Spectra, Terminal, TerminalKind, Topology,
};
pub use materials::{series_cb, Material, MaterialTable, UpdateCoefficients, MAX_MATERIALS};
pub use modes::{
    BasisMode, ModeChoice, ModeMonitor, ModePlane, ModeSheet, PlaneBasis, SParameters, SolvedSheet,
    VoltagePath,
};
pub use monitors::{
    Diffraction, FarField, Flux, Incident, Patch, Probe, ProbeComponent, Region, Snapshot,
};
pub use pml::{AxisProfile, Boundaries};
pub use ports::{
    Port, PortCounts, PortCrossings, PortEdge, PortKind, SurfacePorts, PORT_MODELS_PER_LAUNCH,
};
pub use scan::Scan;
pub use smoothing::Smoothing;
pub use sources::{lagrange_filters, MagneticSheet, Source, Waveform};
pub use space::{Axis, C0, EPS0, ETA0, MU0};
pub use tfsf::{cross, numerical_wavenumber, BoxRelation, Tfsf, TfsfGroup, TfsfPoint};
pub use thin::{e_points_inside, place_pec, points_inside, Move, Placed, ThinRegion};

/// The length units a scene may use, with their size in metres: the one table of them.
pub const LENGTH_UNITS: [(&str, f64); 4] = [("m", 1.0), ("mm", 1e-3), ("um", 1e-6), ("nm", 1e-9)];

/// The size in metres of the length unit `name` (`m`, `mm`, `um`, `nm`), if it is one.
pub fn length_unit_metres(name: &str) -> Option<f64> {
    LENGTH_UNITS.iter().find(|u| u.0 == name).map(|u| u.1)
}

/// A fully resolved simulation.
#[derive(Debug, Clone)]
pub struct Model {
    /// Run name (default output `<name>.h5`).
    pub name: String,
    /// The scene file text, stored in the output for provenance.
    pub scene_text: String,
    /// Length unit the scene was written in (lengths here are all metres).
    pub length_unit: String,
    /// Grid shape, spacing and time step.
    pub grid: Grid,
    /// Field precision.
    pub precision: Precision,
    /// The material table; index 0 is vacuum.
    pub materials: MaterialTable,
    /// Objects in paint order (later over earlier).
    pub objects: Vec<Object>,
    /// Subpixel smoothing of interfaces (None: staircased).
    pub smoothing: Option<Smoothing>,
    /// What terminates each face, and the CPML profiles.
    pub boundaries: Boundaries,
    /// Current sources on grid cells.
    pub sources: Vec<Source>,
    /// The total-field / scattered-field plane-wave source, if any (at most one).
    pub tfsf: Option<Tfsf>,
    /// Point probes.
    pub probes: Vec<Probe>,
    /// Snapshot monitors.
    pub snapshots: Vec<Snapshot>,
    /// Flux monitors.
    pub fluxes: Vec<Flux>,
    /// [`Model::dispersive_counts`], computed once on first use (it paints).
    pub dispersive_counts: std::sync::OnceLock<std::sync::Arc<DispersiveCounts>>,
    /// The conformal PEC surfaces' cut faces, computed on first use ([`Model::conformal`]).
    pub conformal: std::sync::OnceLock<std::sync::Arc<Conformal>>,
    /// Their quick estimate, made on first use ([`Model::conformal_estimate`]).
    pub conformal_estimate: std::sync::OnceLock<std::sync::Arc<ConformalEstimate>>,
    /// The surface ports of dispersive metals' curved surfaces, computed on first use
    /// ([`Model::surface_ports`]).
    pub surface_ports: std::sync::OnceLock<std::sync::Arc<SurfacePorts>>,
    /// True when the scene gave no `courant` and its conformal PEC surfaces made the default
    /// time step the shorter one (`yee check` and `yee plan` say so).
    pub conformal_reduced: bool,
    /// A `[scan]`: the traces' sources and probes (None: one run). This model is trace 0.
    pub scan: Option<std::sync::Arc<Scan>>,
    /// `[sparameters]`: one run per port, then the S-matrix (None: one run).
    pub sparameters: Option<SParameters>,
    /// Lumped ports' and elements' terminals ([`Terminal`]): their voltage and current are
    /// read every step, after the probes.
    pub terminals: Vec<Terminal>,
    /// Cell passes ([`CellPass`]), in the order they run within their half step.
    pub cell_passes: Vec<std::sync::Arc<dyn CellPass>>,
    /// This model describes the imaginary field set of a Bloch cell
    /// ([`Model::imaginary_set`]): its phased sheets carry the imaginary part of their
    /// current. False for every model a scene resolves to.
    pub imaginary: bool,
}

/// What the samples of one cell found ([`Model::shares_at`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum CellShares {
    /// One material fills the cell.
    One(u8),
    /// Two (or more: the two largest shares) meet in it.
    Two {
        /// The material with the larger share.
        a: u8,
        /// The other.
        b: u8,
        /// The share of `a` among the two.
        fa: f64,
        /// n_c^2 for the cell's component (1/3 where no normal was found).
        w: f64,
        /// The normal lies along a grid axis (within about 8 degrees).
        planar: bool,
        /// The interface normal towards `a`, where the samples give one.
        normal: Option<[f64; 3]>,
    },
}

/// Where the dispersive pass's cells lie ([`Model::dispersive_counts`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DispersiveCounts {
    /// Per global x plane: (cells, state values) over the three E components.
    pub planes: Vec<(u64, u64)>,
    /// Per group of the pass (E component 0..3, material id): the global x planes
    /// [first, last) that hold its cells.
    pub groups: Vec<(usize, u8, [usize; 2])>,
}

/// The most cells [`Model::dispersive_counts`] paints to count exactly (about a second
/// of painting on two cores).
pub const EXACT_DISPERSIVE_CELLS: u64 = 50_000_000;

/// A source's cells as one slab sees them: (model source index, component, cell ranges with x
/// in local plane numbers, where local plane 1 is the slab's first owned plane).
pub type SlabSource = (usize, Component, [[usize; 2]; 3]);

impl Model {
    /// The probes, then the lumped terminals' ([`Terminal::probe`]: their voltage and current):
    /// the order of the samples read each step and of the result file's series.
    pub fn every_probe(&self) -> impl Iterator<Item = &Probe> {
        self.probes
            .iter()
            .chain(self.terminals.iter().map(|t| &t.probe))
    }

    /// The axes of one cell between periodic faces, along which every derivative vanishes (the
    /// grid is 2-D or 1-D; its time step is a fraction of that stability limit). All false
    /// when every axis is such (nothing would move).
    pub fn flat_axes(&self) -> [bool; 3] {
        let periodic = [0, 1, 2].map(|a| {
            self.boundaries.faces[a]
                .iter()
                .all(|f| *f == BoundaryKind::Periodic)
        });
        Grid::flat_axes_of(self.grid.shape, periodic)
    }

    /// The electric current sheets that touch global x planes `[x0, x1)`, clipped to them,
    /// with x in local plane numbers (plane 0 is the left halo).
    pub fn sources_in(&self, x0: usize, x1: usize) -> Vec<SlabSource> {
        let sheets = self
            .sources
            .iter()
            .enumerate()
            .map(|(k, s)| (k, s.component, s.cells));
        clip_sheets(sheets, x0, x1)
    }

    /// The magnetic current sheets (of one-way plane waves) that touch global x planes
    /// `[x0, x1)`, as [`Model::sources_in`] gives the electric ones; H plane `i` is the one at
    /// x = (i + 1/2) dx, owned by the slab that owns E plane `i`.
    pub fn magnetic_sources_in(&self, x0: usize, x1: usize) -> Vec<SlabSource> {
        let sheets = self
            .sources
            .iter()
            .enumerate()
            .filter_map(|(k, s)| s.magnetic.as_ref().map(|m| (k, m.component, m.cells)));
        clip_sheets(sheets, x0, x1)
    }

    /// A mode source's weights ([`Source::profiles`]) of model source `k` on global x planes
    /// `[x0, x1)`: of its electric sheet, or with `magnetic` of its magnetic one, over the
    /// sheet's cells there in C order (the slab's part of [`Model::sources_in`]'s ranges); None
    /// for a uniform sheet or one outside the planes.
    pub fn sheet_weights(
        &self,
        k: usize,
        magnetic: bool,
        x0: usize,
        x1: usize,
    ) -> Option<Vec<f64>> {
        let s = &self.sources[k];
        let cells = match (&s.magnetic, magnetic) {
            (Some(m), true) => m.cells,
            _ => s.cells,
        };
        let (a, b) = (cells[0][0].max(x0), cells[0][1].min(x1));
        if a >= b {
            return None;
        }
        if let Some(kt) = s.transverse_k {
            let component = match (&s.magnetic, magnetic) {
                (Some(m), true) => m.component,
                _ => s.component,
            };
            return Some(self.phase_weights(component, [[a, b], cells[1], cells[2]], kt));
        }
        let weights = s.profiles()?[magnetic as usize];
        let per_plane = (cells[1][1] - cells[1][0]) * (cells[2][1] - cells[2][0]);
        Some(weights[(a - cells[0][0]) * per_plane..(b - cells[0][0]) * per_plane].to_vec())
    }

    /// The real (or, for [`Model::imaginary`], imaginary) part of e^{-i k . r} over the cells
    /// `cells` of `component` in C order: an oblique plane wave's sheet weights.
    fn phase_weights(&self, component: Component, cells: [[usize; 2]; 3], k: [f64; 3]) -> Vec<f64> {
        let mut out = Vec::new();
        for i in cells[0][0]..cells[0][1] {
            for j in cells[1][0]..cells[1][1] {
                for l in cells[2][0]..cells[2][1] {
                    let r = self
                        .grid
                        .position(component, [i as f64, j as f64, l as f64]);
                    let phase = -(k[0] * r[0] + k[1] * r[1] + k[2] * r[2]);
                    out.push(if self.imaginary {
                        phase.sin()
                    } else {
                        phase.cos()
                    });
                }
            }
        }
        out
    }

    /// The model of a Bloch cell's imaginary field set: this model with its phased sheets'
    /// weights the imaginary part of their current ([`Source::transverse_k`]). The engine of
    /// a Bloch run steps two engines, one of this model and one of `self`
    /// ([`crate::backend::bloch`]).
    pub fn imaginary_set(&self) -> Model {
        Model {
            imaginary: true,
            scan: None,
            ..self.clone()
        }
    }

    /// Values of the mode sources' and oblique plane waves' weights on global x planes `[x0, x1)` (electric and
    /// magnetic sheets), which a slab holds in the run's precision (the plan counts them from
    /// the cells alone, before any mode is solved).
    pub fn sheet_weight_values(&self, x0: usize, x1: usize) -> u64 {
        let in_planes = |cells: &[[usize; 2]; 3]| {
            let (a, b) = (cells[0][0].max(x0), cells[0][1].min(x1));
            (b.saturating_sub(a) * (cells[1][1] - cells[1][0]) * (cells[2][1] - cells[2][0])) as u64
        };
        self.sources
            .iter()
            .filter(|s| s.mode.is_some() || s.transverse_k.is_some())
            .map(|s| in_planes(&s.cells) + s.magnetic.as_ref().map_or(0, |m| in_planes(&m.cells)))
            .sum()
    }

    /// Paint the material ids of component `c` (E, or H when some material is magnetic) over global x planes `[x0, x1)` into `out`
    /// (C order, `(x1 - x0) * ny * nz` ids, vacuum where no object is): objects in paint
    /// order, each only over the index box its bounds cover.
    pub fn paint_materials(&self, c: Component, x0: usize, x1: usize, out: &mut [u8]) {
        self.paint_objects(c, x0, x1, out);
        if c.is_electric() {
            self.reopen_conformal(c, x0, x1, out);
        }
    }

    /// [`Model::paint_materials`] but for the conformal surfaces' reopened and closed points
    /// (which need every cut face: [`Model::conformal`]).
    fn paint_objects(&self, c: Component, x0: usize, x1: usize, out: &mut [u8]) {
        use rayon::prelude::*;
        let g = &self.grid;
        let [_, ny, nz] = g.shape;
        let off = c.offset();
        // Each object's index box: its bounds, widened by 1e-6 of a cell so that nodes exactly
        // on a face are tested, not skipped.
        let boxes: Vec<[[usize; 2]; 3]> = self
            .objects
            .iter()
            .map(|obj| {
                let (lo, hi) = obj.bounds();
                let idx = |a: usize, x: f64| g.fractional_index(a, x) - off[a];
                let first = |a: usize| (idx(a, lo[a]) - 1e-6).ceil().max(0.0) as usize;
                let last = |a: usize| {
                    ((idx(a, hi[a]) + 1e-6).floor() + 1.0).clamp(0.0, g.shape[a] as f64) as usize
                };
                [0, 1, 2].map(|a| [first(a), last(a)])
            })
            .collect();
        // Planes in parallel, objects in paint order on each.
        out.par_chunks_mut(ny * nz)
            .enumerate()
            .for_each(|(di, plane)| {
                let i = x0 + di;
                for (obj, b) in self.objects.iter().zip(&boxes) {
                    if !(b[0][0]..b[0][1]).contains(&i) {
                        continue;
                    }
                    let [j0, j1] = b[1];
                    let [k0, k1] = b[2];
                    if let Shape::Prism(prism) = &obj.shape {
                        if prism.axis == 2 && prism.taper == 0.0 {
                            // Vertical walls along z: one in-plane test a column.
                            for j in j0..j1 {
                                let p = g.position(c, [i as f64, j as f64, k0 as f64]);
                                if !prism.in_base([p[0], p[1]]) {
                                    continue;
                                }
                                for k in k0..k1 {
                                    let z = g.position(c, [i as f64, j as f64, k as f64])[2];
                                    if prism.holds_height(z) {
                                        plane[j * nz + k] = obj.material;
                                    }
                                }
                            }
                            continue;
                        }
                    }
                    if let Shape::Mesh(mesh) = &obj.shape {
                        // A whole column from one ray's crossings.
                        for j in j0..j1 {
                            let p = g.position(c, [i as f64, j as f64, k0 as f64]);
                            let spans = mesh.spans(p, 2);
                            if spans.is_empty() {
                                continue;
                            }
                            for k in k0..k1 {
                                let z = g.position(c, [i as f64, j as f64, k as f64])[2];
                                if spans.iter().any(|&(a, b)| a <= z && z <= b) {
                                    plane[j * nz + k] = obj.material;
                                }
                            }
                        }
                        continue;
                    }
                    for j in j0..j1 {
                        for k in k0..k1 {
                            let p = g.position(c, [i as f64, j as f64, k as f64]);
                            if obj.contains(p) {
                                plane[j * nz + k] = obj.material;
                            }
                        }
                    }
                }
            });
        // Only E components are smoothed: the mixtures average permittivities, and the H
        // components, which carry mu, keep their materials staircased.
        if let (Some(smoothing), true) = (&self.smoothing, c.is_electric()) {
            self.smooth(smoothing, c, x0, x1, out);
        }
    }

    /// The cells of E component `c` that the dispersive pass updates, from the painted ids of
    /// global x planes `[x0, x0 + ids.len() / (ny nz))` (as [`Model::paint_materials`] writes
    /// them): for each material with poles, in id order, the indices into `ids` of its cells.
    /// Cells whose tangential E the PEC-faces pass holds at zero are left out: their field
    /// never changes, so their poles would only follow a field that is not there.
    ///
    /// Indices are u32 (the CUDA kernel's index type): a slab with dispersive cells holds at
    /// most 2^32 cells per component, which this checks.
    pub fn dispersive_cells(&self, c: Component, x0: usize, ids: &[u8]) -> Vec<(u8, Vec<u32>)> {
        let table = &self.materials.materials;
        if !self.materials.any_dispersive() {
            return Vec::new();
        }
        let [_, ny, nz] = self.grid.shape;
        let plane = ny * nz;
        assert!(
            ids.len() <= u32::MAX as usize,
            "a slab with dispersive cells holds at most 2^32 cells per component"
        );
        let zeroed = [0, 1, 2]
            .map(|a| a != c.axis() as usize && self.boundaries.faces[a][0].zeroes_tangential_e());
        let mut groups: Vec<(u8, Vec<u32>)> = Vec::new();
        let mut slot = [usize::MAX; 256];
        let ports = self.surface_ports();
        for (n, &id) in ids.iter().enumerate() {
            let m = &table[id as usize];
            if m.pec || !m.is_dispersive() {
                continue;
            }
            let (i, j, k) = (x0 + n / plane, (n % plane) / nz, n % nz);
            if (zeroed[0] && i == 0) || (zeroed[1] && j == 0) || (zeroed[2] && k == 0) {
                continue;
            }
            // A port edge's E is its ports' (`SurfacePorts`), which step its material.
            let edge = PortEdge {
                cell: [i as u32, j as u32, k as u32],
                component: c.axis() as u8,
            };
            if !ports.is_empty() && ports.find(edge).is_some() {
                continue;
            }
            if slot[id as usize] == usize::MAX {
                slot[id as usize] = groups.len();
                groups.push((id, Vec::new()));
            }
            groups[slot[id as usize]].1.push(n as u32);
        }
        groups.sort_by_key(|g| g.0);
        groups
    }

    /// Per global x plane, the dispersive pass's (cells, state values) over the three E
    /// components: what its arrays hold for that plane ([`Model::dispersive_cells`]; each cell
    /// keeps its E^n and its poles' state). Empty when no material has poles; otherwise it
    /// paints the planes the dispersive objects cover, in parallel, once per model.
    ///
    /// Exact while those planes hold at most [`EXACT_DISPERSIVE_CELLS`] cells; beyond, every
    /// k-th plane is painted and stands for the k planes from it (the plan of a huge grid must
    /// answer in well under a second; the backends count their own slabs exactly).
    pub fn dispersive_counts(&self) -> std::sync::Arc<DispersiveCounts> {
        self.dispersive_counts
            .get_or_init(|| std::sync::Arc::new(self.count_dispersive_planes()))
            .clone()
    }

    /// About how long painting the three E components' ids (with their smoothing, which looks
    /// at every cell) takes when a run starts on `cores` cores, seconds; None without objects.
    /// Blocks of consecutive planes (up to 8, at most 2e6 cells) spread over the grid are
    /// painted and timed, for about a quarter of a second at most, and the time scaled to
    /// every plane: an estimate (the planes painted may hold more or less geometry than the
    /// rest, and a block's end planes look up their outer neighbours one by one).
    pub fn painting_seconds(&self, cores: usize) -> Option<f64> {
        if self.objects.is_empty() {
            return None;
        }
        // Cutting the conformal surfaces' faces, which the painter needs first: the sampled
        // estimate timed and scaled by its sampling (it runs on every core already).
        let estimate = self.conformal_estimate();
        let cutting = estimate.seconds * estimate.sampling as f64;
        let [nx, ny, nz] = self.grid.shape;
        let per_block = (2_000_000 / (ny * nz).max(1)).clamp(1, 8).min(nx);
        let blocks = 4.min(nx / per_block).max(1);
        let mut ids = vec![0u8; per_block * ny * nz];
        let start = std::time::Instant::now();
        let mut planes = 0;
        for b in 0..blocks {
            let x0 = ((2 * b + 1) * nx / (2 * blocks)).min(nx - per_block);
            for c in [Component::Ex, Component::Ey, Component::Ez] {
                ids.fill(0);
                self.paint_objects(c, x0, x0 + per_block, &mut ids);
            }
            planes += per_block;
            if start.elapsed().as_secs_f64() > 0.25 {
                break;
            }
        }
        let per_plane = start.elapsed().as_secs_f64() / planes as f64;
        Some(per_plane * nx as f64 / cores as f64 + cutting)
    }

    /// The global x planes [first, last) object `i` may paint: its bounds widened by a cell
    /// each way (a component's offset and the smoothing reach that far), within the grid.
    pub fn object_x_planes(&self, i: usize) -> (usize, usize) {
        let g = &self.grid;
        let nx = g.shape[0];
        let (a, b) = self.objects[i].bounds();
        let first = (g.fractional_index(0, a[0]) - 1.0).floor().max(0.0) as usize;
        let last = (g.fractional_index(0, b[0]) + 2.0).ceil().max(0.0) as usize;
        (first.min(nx), last.min(nx))
    }

    fn count_dispersive_planes(&self) -> DispersiveCounts {
        if !self.materials.any_dispersive() {
            return DispersiveCounts::default();
        }
        let g = &self.grid;
        let [nx, ny, nz] = g.shape;
        let table = &self.materials.materials;
        // The x planes any object made of a dispersive material may touch.
        let mut lo = nx;
        let mut hi = 0;
        for (i, o) in self.objects.iter().enumerate() {
            if table[o.material as usize].is_dispersive() {
                let (first, last) = self.object_x_planes(i);
                lo = lo.min(first);
                hi = hi.max(last);
            }
        }
        let mut counts = vec![(0u64, 0u64); nx];
        use rayon::prelude::*;
        let plane = ny * nz;
        let hi = hi.max(lo);
        let every = ((hi - lo) as u64 * plane as u64)
            .div_ceil(EXACT_DISPERSIVE_CELLS)
            .max(1) as usize;
        // Per plane painted: its counts and the groups (component, material) it holds.
        type Painted = (usize, (u64, u64), Vec<(usize, u8)>);
        let per: Vec<Painted> = (lo..hi)
            .step_by(every)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|i| {
                let mut ids = vec![0u8; plane];
                let mut n = (0u64, 0u64);
                let mut groups = Vec::new();
                for (k, c) in [Component::Ex, Component::Ey, Component::Ez]
                    .into_iter()
                    .enumerate()
                {
                    ids.fill(0);
                    self.paint_materials(c, i, i + 1, &mut ids);
                    for (id, cells) in self.dispersive_cells(c, i, &ids) {
                        let state = table[id as usize].pole_state_len();
                        n.0 += cells.len() as u64;
                        n.1 += cells.len() as u64 * (1 + state) as u64;
                        groups.push((k, id));
                    }
                }
                (i, n, groups)
            })
            .collect();
        let mut spans: std::collections::BTreeMap<(usize, u8), [usize; 2]> = Default::default();
        for (i, n, groups) in per {
            let end = (i + every).min(hi);
            for c in &mut counts[i..end] {
                *c = n;
            }
            for key in groups {
                let span = spans.entry(key).or_insert([i, end]);
                span[0] = span[0].min(i);
                span[1] = span[1].max(end);
            }
        }
        DispersiveCounts {
            planes: counts,
            groups: spans.into_iter().map(|((c, m), s)| (c, m, s)).collect(),
        }
    }

    /// The surface ports ([`SurfacePorts`]): the averaged tensor at every curved surface of a
    /// dispersive metal, computed once per model.
    pub fn surface_ports(&self) -> std::sync::Arc<SurfacePorts> {
        self.surface_ports
            .get_or_init(|| std::sync::Arc::new(SurfacePorts::of(self)))
            .clone()
    }

    /// Replace the ids of cells that straddle an interface by mixture ids (see [`Smoothing`]).
    /// A cell straddles one when a face neighbour has another id, or when it lies where a
    /// dielectric thinner than a cell crosses (such a film may paint no Yee point at all, so
    /// no neighbour differs); neighbours beyond the slab are looked up directly, so every slab
    /// split gives the same ids. A cell held by PEC keeps it: smoothing never erases a
    /// conductor, however thin.
    fn smooth(&self, smoothing: &Smoothing, c: Component, x0: usize, x1: usize, out: &mut [u8]) {
        let g = &self.grid;
        let [nx, ny, nz] = g.shape;
        let table = &self.materials.materials;
        let thin: Vec<ThinRegion> = self
            .objects
            .iter()
            .filter(|o| !table[o.material as usize].staircased())
            .filter_map(|o| ThinRegion::of(g, o, c))
            .collect();
        let meshes: Vec<([f64; 3], [f64; 3])> = self
            .objects
            .iter()
            .filter(|o| matches!(o.shape, Shape::Mesh(_)))
            .map(|o| o.bounds())
            .collect();
        let near_mesh = |cell: [usize; 3]| {
            let p = g.position(c, cell.map(|v| v as f64));
            meshes.iter().any(|(lo, hi)| {
                (0..3).all(|a| p[a] >= lo[a] - g.cell[a] && p[a] <= hi[a] + g.cell[a])
            })
        };
        let at = |i: usize, j: usize, k: usize| ((i - x0) * ny + j) * nz + k;
        let center = |out: &[u8], i: usize, j: usize, k: usize| {
            if (x0..x1).contains(&i) {
                out[at(i, j, k)]
            } else {
                self.material_at(c, i, j, k)
            }
        };
        // Planes in parallel: find the straddling cells against the unmodified ids, then mix.
        use rayon::prelude::*;
        let ids: &[u8] = out;
        let changes: Vec<(usize, u8)> = (x0..x1)
            .into_par_iter()
            .flat_map_iter(|i| {
                let mut plane = Vec::new();
                for j in 0..ny {
                    for k in 0..nz {
                        let m = ids[at(i, j, k)];
                        if table[m as usize].staircased() {
                            continue;
                        }
                        // The thinnest film whose cells these are integrates along its normal.
                        let thin_axis = thin
                            .iter()
                            .filter(|r| r.holds([i, j, k]))
                            .min_by(|a, b| a.thickness.total_cmp(&b.thickness))
                            .map(|r| r.axis);
                        let differs = (i > 0 && center(ids, i - 1, j, k) != m)
                            || (i + 1 < nx && center(ids, i + 1, j, k) != m)
                            || (j > 0 && ids[at(i, j - 1, k)] != m)
                            || (j + 1 < ny && ids[at(i, j + 1, k)] != m)
                            || (k > 0 && ids[at(i, j, k - 1)] != m)
                            || (k + 1 < nz && ids[at(i, j, k + 1)] != m);
                        // Near a mesh, exact chords along z too: 16 rays of the mesh's own
                        // painting instead of 64 point tests, each a ray of its own.
                        let across =
                            thin_axis.or_else(|| (differs && near_mesh([i, j, k])).then_some(2));
                        if differs || across.is_some() {
                            if let Some(id) = self.mixture_at(smoothing, c, [i, j, k], across) {
                                if id != m {
                                    plane.push((at(i, j, k), id));
                                }
                            }
                        }
                    }
                }
                plane
            })
            .collect();
        for (index, id) in changes {
            out[index] = id;
        }
    }

    /// The mixture id of the cell of component `c` at `cell`, or None to keep the centre's
    /// material (a PEC is involved, see [`Material::staircased`], or the pair has no mixtures).
    /// The materials' shares and centroids come from 4 x 4 x 4 point samples over the cell,
    /// or, with `across` an axis (a film thinner than a cell crosses the cell), from the exact
    /// chords of 4 x 4 lines along that axis: point samples may all miss such a film.
    fn mixture_at(
        &self,
        smoothing: &Smoothing,
        c: Component,
        cell: [usize; 3],
        across: Option<usize>,
    ) -> Option<u8> {
        match self.shares_at(c, cell, across)? {
            CellShares::One(a) => Some(a),
            CellShares::Two {
                a,
                b,
                fa,
                w,
                planar,
                ..
            } => smoothing.mixture(a, b, fa, w, planar),
        }
    }

    /// The material at each point of the 4 x 4 x 4 grid `xyz[0] x xyz[1] x xyz[2]` (m), bit
    /// `(a * 4 + b) * 4 + d` for point (x_a, y_b, z_d): the last object in paint order that
    /// holds it, vacuum where none does. Each object tests the whole grid at once
    /// ([`Object::sample_mask`]).
    fn sample_owners(&self, xyz: [[f64; 4]; 3]) -> [u8; 64] {
        let mut owner = [0u8; 64];
        let mut left = u64::MAX;
        for o in self.objects.iter().rev() {
            if left == 0 {
                break;
            }
            let mut held = o.sample_mask(xyz) & left;
            left &= !held;
            while held != 0 {
                owner[held.trailing_zeros() as usize] = o.material;
                held &= held - 1;
            }
        }
        owner
    }

    /// The materials' shares of the cell of component `c` at `cell` (see
    /// [`Model::mixture_at`]), or None where a PEC is involved.
    fn shares_at(
        &self,
        c: Component,
        cell: [usize; 3],
        across: Option<usize>,
    ) -> Option<CellShares> {
        const N: usize = 4;
        let g = &self.grid;
        let index = cell.map(|i| i as f64);
        let p = g.position(c, index);
        let shift = c.offset();
        // The sample at offset u (in cells) from the component's point: on a uniform axis
        // p + u d; on a graded one through the index-to-coordinate map, so that the samples
        // cover the component's own cell (the primal cell around a cell centre, the dual cell
        // from centre to centre around a node, unequal halves on a graded axis).
        let sample = |x: usize, u: f64| match g.lines[x] {
            None => p[x] + u * g.cell[x],
            Some(_) => g.coordinate(x, index[x] + shift[x] + u),
        };
        // Per material: (id, weight, weighted offset of its centroid from p).
        let mut shares: Vec<(u8, f64, [f64; 3])> = Vec::new();
        let mut add = |m: u8, weight: f64, off: [f64; 3]| match shares.iter_mut().find(|e| e.0 == m)
        {
            Some(e) => {
                e.1 += weight;
                (0..3).for_each(|x| e.2[x] += off[x]);
            }
            None => shares.push((m, weight, off)),
        };
        let offset = |q: [f64; 3], u: [f64; 3]| {
            [0, 1, 2].map(|x| match g.lines[x] {
                None => u[x] * g.cell[x],
                Some(_) => q[x] - p[x],
            })
        };
        let u_of = |s: usize| (s as f64 + 0.5) / N as f64 - 0.5;
        match across {
            None => {
                // The samples form a grid: each object finds which of them it holds at once
                // (the last object, in paint order, holding a sample gives its material).
                let xyz = [0, 1, 2].map(|x| [0, 1, 2, 3].map(|s| sample(x, u_of(s))));
                let owner = self.sample_owners(xyz);
                for a in 0..N {
                    for b in 0..N {
                        for d in 0..N {
                            let u = [a, b, d].map(u_of);
                            let q = [xyz[0][a], xyz[1][b], xyz[2][d]];
                            let m = owner[(a * N + b) * N + d];
                            if self.materials.materials[m as usize].staircased() {
                                return None;
                            }
                            add(m, 1.0, offset(q, u));
                        }
                    }
                }
            }
            Some(axis) => {
                let (t0, t1) = (sample(axis, -0.5), sample(axis, 0.5));
                // The two other axes, in increasing order.
                let others = [(axis == 0) as usize, 2 - (axis == 2) as usize];
                for a in 0..N {
                    for b in 0..N {
                        let mut u = [0.0; 3];
                        u[others[0]] = u_of(a);
                        u[others[1]] = u_of(b);
                        let q = [0, 1, 2].map(|x| sample(x, u[x]));
                        for (m, ta, tb) in self.chords(q, axis, t0, t1) {
                            if self.materials.materials[m as usize].staircased() {
                                return None;
                            }
                            // A chord weighs its share of the line; its centroid is its middle.
                            let w = (tb - ta) / (t1 - t0);
                            let mut off = offset(q, u);
                            off[axis] = 0.5 * (ta + tb) - p[axis];
                            add(m, w, off.map(|v| v * w));
                        }
                    }
                }
            }
        }
        shares.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        let (a, na, centroid) = shares[0];
        let Some(&(b, nb, _)) = shares.get(1) else {
            return Some(CellShares::One(a));
        };
        let fa = na / (na + nb);
        // The offset of material a's centroid is along the interface normal.
        let len = centroid.iter().map(|v| v * v).sum::<f64>().sqrt();
        let axis = c.axis() as usize;
        let found = len > 1e-12 * g.cell.iter().sum::<f64>();
        let normal = found.then(|| centroid.map(|v| v / len));
        let w = normal.map_or(1.0 / 3.0, |n| n[axis].powi(2));
        // A plane interface along a grid plane: the normal along one axis (within about 8
        // degrees), which a dispersive pair's mixtures need (see `Smoothing::mixture`).
        let planar = normal.is_some_and(|n| n.iter().any(|v| v.abs() > 0.99));
        Some(CellShares::Two {
            a,
            b,
            fa,
            w,
            planar,
            normal,
        })
    }

    /// The materials along the line `q + t e_axis` for `t` from `t0` to `t1` (coordinates
    /// along `axis`, m): `(material, from, to)` pieces in order, each object's chord painted
    /// over the earlier ones', vacuum where none is.
    fn chords(&self, q: [f64; 3], axis: usize, t0: f64, t1: f64) -> Vec<(u8, f64, f64)> {
        let mut pieces = vec![(0u8, t0, t1)];
        let origin = {
            let mut o = q;
            o[axis] = 0.0;
            o
        };
        for (o, (ta, tb)) in self.objects.iter().flat_map(|o| {
            o.chords(origin, axis, t0, t1)
                .into_iter()
                .map(move |c| (o, c))
        }) {
            let mut next = Vec::with_capacity(pieces.len() + 2);
            for &(m, a, b) in &pieces {
                if a < ta {
                    next.push((m, a, b.min(ta)));
                }
                if b > tb {
                    next.push((m, a.max(tb), b));
                }
            }
            next.push((o.material, ta, tb));
            next.sort_by(|x, y| x.1.total_cmp(&y.1));
            pieces = next;
        }
        pieces.retain(|p| p.2 > p.1);
        pieces
    }

    /// Material index for `component` at global cell `(i, j, k)`: the last object that contains
    /// the component's staggered position, or vacuum.
    pub fn material_at(&self, component: Component, i: usize, j: usize, k: usize) -> u8 {
        let p = self
            .grid
            .position(component, [i as f64, j as f64, k as f64]);
        self.objects
            .iter()
            .rev()
            .find(|o| o.contains(p))
            .map_or(0, |o| o.material)
    }
}

/// Clip sheets to global x planes `[x0, x1)`, x in local plane numbers.
fn clip_sheets(
    sheets: impl Iterator<Item = (usize, Component, [[usize; 2]; 3])>,
    x0: usize,
    x1: usize,
) -> Vec<SlabSource> {
    sheets
        .filter_map(|(k, component, cells)| {
            let a = cells[0][0].max(x0);
            let b = cells[0][1].min(x1);
            (a < b).then(|| (k, component, [[a - x0 + 1, b - x0 + 1], cells[1], cells[2]]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Painting by bounding boxes gives, cell by cell, what testing every cell against every
    /// object gives (the painter only skips cells outside an object's bounds). The PEC is
    /// staircased: a conformal one reopens and closes edges at its surface by their exact
    /// fractions, not by their midpoints (`conformal.rs`).
    #[test]
    fn painting_matches_the_point_test_everywhere() {
        let text = r#"
[simulation]
cell_size = [0.05, 0.04, 0.03]
size = [1.0, 0.8, 0.6]
steps = 1
subpixel = false
[boundaries]
default = { type = "pec" }
[materials]
a = { epsilon = 2.0 }
b = { epsilon = 3.0 }
metal = { pec = true, conformal = false }
[[geometry]]
shape = "box"
material = "a"
center = [0.1, 0.0, 0.0]
size = [0.5, 0.4, 0.3]
[[geometry]]
shape = "sphere"
material = "b"
center = [-0.2, 0.1, 0.05]
radius = 0.2
[[geometry]]
shape = "cylinder"
material = "metal"
center = [0.2, -0.1, 0.0]
radius = 0.1
height = 0.5
axis = [1.0, 1.0, 0.0]
"#;
        let (m, _) = crate::scene::load_str(text, "t.toml").unwrap();
        let [nx, ny, nz] = m.grid.shape;
        for c in [Component::Ex, Component::Ey, Component::Ez] {
            let mut out = vec![0u8; 7 * ny * nz];
            m.paint_materials(c, 9, 16, &mut out);
            for i in 9..16 {
                for j in 0..ny {
                    for k in 0..nz {
                        assert_eq!(
                            out[((i - 9) * ny + j) * nz + k],
                            m.material_at(c, i, j, k),
                            "{c:?} at {i},{j},{k}"
                        );
                    }
                }
            }
            assert!(nx > 16 && out.contains(&2) && out.contains(&3) && out.contains(&4));
        }
    }
}

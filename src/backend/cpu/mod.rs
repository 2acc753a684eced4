//! The CPU backend: slabs stepped with rayon, generic over f32 and f64.
//!
//! Each slab stores the six components as x-planes of `ny * nz` values (z contiguous) with one
//! halo plane on each side, so local plane `p` is global plane `x0 + p - 1`. The update is
//! the plain two-pass Yee scheme, pass by pass ([`crate::backend::pass`]), or the same passes
//! fused into one sweep along x per step (`fused`); the CPML correction runs on each plane
//! right after its curl, and sources and PEC faces are applied last. Every cell is computed by the same arithmetic in
//! the same order whatever the slab count, so decomposition does not change a single bit.

mod bloch;
mod cells;
mod conformal;
mod cpml;
mod dispersive;
mod fused;
mod isa;
mod ports;
mod state;
mod tfsf;
mod update;

use super::{Allocation, Backend, GatherTicket, Half, Pass};
use crate::decomp::{HaloCopy, HaloPlan, HaloSide, SlabRange};
use crate::model::{Component, Model, Region};
use crate::operator::Operator;
use crate::real::{written_zeros, Real};
pub use isa::Isa;
use rayon::prelude::*;
use std::ops::Range;
use update::{e_plane, e_plane_flat, h_plane, h_plane_flat, RowCoef};

/// Marks a row whose cells do not all share one material.
const MIXED_ROW: u16 = u16::MAX;

/// Copy the part of `region` on local plane `p` of the slab field `f` (planes of `ny x nz`
/// values) into `out`, C order: the rows of one x index of [`Backend::gather`].
fn copy_plane_region<T: Real>(
    f: &[T],
    p: usize,
    [ny, nz]: [usize; 2],
    region: &Region,
    out: &mut [T],
) {
    let mut o = 0;
    for j in (region.start[1]..region.end[1]).step_by(region.stride[1]) {
        let base = (p * ny + j) * nz;
        let row = &f[base + region.start[2]..base + region.end[2]];
        for v in row.iter().step_by(region.stride[2]) {
            out[o] = *v;
            o += 1;
        }
    }
    debug_assert_eq!(o, out.len());
}

/// Read-only data every slab uses: the operator's tables and a row of zeros (the neighbour
/// beyond a PEC face).
struct Shared<T> {
    ny: usize,
    nz: usize,
    /// The vector ISA the plane updates run with ([`Isa::detect`] unless set).
    isa: Isa,
    op: Operator<T>,
    zeros: Vec<T>,
    /// The model's cell passes ([`crate::model::CellPass`]).
    cell_passes: Vec<std::sync::Arc<dyn crate::model::CellPass>>,
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = Operator<T>;
    fn deref(&self) -> &Operator<T> {
        &self.op
    }
}

/// The index of cell (local plane `p`, `y`, `z`) in the C-order weights of a sheet over the
/// slab's local cell ranges `cells`.
fn sheet_cell(cells: &[[usize; 2]; 3], p: usize, y: usize, z: usize) -> usize {
    let (cy, cz) = (cells[1][1] - cells[1][0], cells[2][1] - cells[2][0]);
    ((p - cells[0][0]) * cy + (y - cells[1][0])) * cz + (z - cells[2][0])
}

/// One slab's arrays.
struct Slab<T> {
    range: SlabRange,
    /// Ex, Ey, Ez with halos: (len + 2) planes.
    e: [Vec<T>; 3],
    /// Hx, Hy, Hz with halos.
    h: [Vec<T>; 3],
    /// Material id per owned cell, per E component.
    mat: [Vec<u8>; 3],
    /// Per owned (plane, row): the row's material if uniform, else MIXED_ROW.
    row_mat: [Vec<u16>; 3],
    /// Material id per owned cell per H component, when some material is magnetic (else
    /// empty: every H cell then uses the vacuum coefficients).
    hmat: [Vec<u8>; 3],
    /// Per owned (plane, row) of H, as `row_mat`.
    hrow_mat: [Vec<u16>; 3],
    /// The dispersive pass's cells and state, one group per (E component, material).
    dispersive: Vec<dispersive::Group<T>>,
    /// x-PML: (local plane, layer index) of the owned planes in a layer; psi for Ey, Ez, Hy, Hz.
    pml_x_planes: Vec<(usize, usize)>,
    psi_x: [Vec<T>; 4],
    /// y-PML psi for Ex, Ez, Hx, Hz: [owned plane][y layer][z].
    psi_y: [Vec<T>; 4],
    /// z-PML psi for Ex, Ey, Hx, Hy: [owned plane][y][z layer].
    psi_z: [Vec<T>; 4],
    /// Sources that touch this slab: (model source index, component, local cell ranges).
    sources: Vec<(usize, Component, [[usize; 2]; 3])>,
    /// Magnetic sheets that touch this slab, likewise (H components).
    magnetic: Vec<(usize, Component, [[usize; 2]; 3])>,
    /// Per entry of `sources`, then of `magnetic`: a mode source's weights over its cells in
    /// this slab ([`Model::sheet_weights`]), None for a uniform sheet.
    weights: [Vec<Option<Vec<T>>>; 2],
    /// The TF/SF correction points in this slab, one entry per group in pass order.
    tfsf: Vec<crate::operator::TfsfSlabGroup<T>>,
    /// The TF/SF source's 1-D incident grid, when this slab holds correction points: each
    /// such slab advances its own copy, identically (as each GPU does), so that a slab's
    /// bytes are the plan's per-slab count.
    incident: Option<tfsf::Incident<T>>,
    /// Per model cell pass, its state over its cells in this slab (`cells`).
    cell_state: Vec<Vec<T>>,
    /// The conformal PEC pass's cut faces in this slab, one entry per H component.
    conformal: Vec<crate::operator::ConformalSlabFaces<T>>,
}

/// The rayon engine over all slabs.
pub struct CpuBackend<T> {
    shared: Shared<T>,
    slabs: Vec<Slab<T>>,
    allocation: Allocation,
    monitors: Monitors<T>,
    /// Field values per row band of the fused sweep (`fused`).
    band_values: usize,
    /// Bytes of fields per part of a checkpoint ([`super::parts::FIELD_PART_BYTES`]).
    checkpoint_part_bytes: usize,
    /// The surface ports ([`crate::model::SurfacePorts`]), when the model has any.
    ports: Option<ports::PortPass<T>>,
}

/// The monitor buffers a [`CpuBackend`] holds, in bytes, by what they hold
/// ([`CpuBackend::monitor_buffer_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MonitorBuffers {
    /// Gather buffers of queued snapshot regions.
    pub gathers: u64,
    /// Flux DFT accumulators (f64), the gather buffer of the flux planes and the planes of a
    /// flux sample read within a sweep.
    pub flux: u64,
    /// Probe rows queued and not yet drained (f64).
    pub probe_rows: u64,
}

/// The queued monitor reads of the [`Backend`] trait, done at once: probe rows wait in a
/// vector, each queued region in a buffer of its own until taken (the time loop takes each at
/// once, so one buffer of the largest region is reused), and the flux DFTs are the host
/// accumulators of [`crate::flux`].
struct Monitors<T> {
    probe_rows: Vec<f64>,
    /// (taken, values) of each queued region.
    gathers: Vec<(bool, Vec<T>)>,
    flux: Option<crate::flux::FluxAccumulators>,
    /// Gather buffer of the flux planes.
    flux_staging: Vec<T>,
    /// The regions of a flux sample read within a sweep ([`CpuBackend::fused_steps`]), in the
    /// order [`crate::flux::FluxAccumulators::regions_at`] lists them, back to back: room
    /// for every region of every monitor ([`crate::flux::sweep_read_len`]).
    flux_read: Vec<T>,
    /// The step whose flux sample `flux_read` holds, until it is added.
    flux_read_step: Option<usize>,
}

impl<T: Real> CpuBackend<T> {
    /// Allocate and initialise the slabs for `model` split as `ranges` (tiling [0, nx)).
    pub fn new(model: &Model, ranges: &[SlabRange]) -> Self {
        let [_, ny, nz] = model.grid.shape;
        let shared = Shared {
            ny,
            nz,
            isa: Isa::detect(),
            op: Operator::new(model),
            zeros: vec![T::ZERO; nz.max(ny)],
            cell_passes: model.cell_passes.clone(),
        };
        let slabs: Vec<Slab<T>> = ranges
            .par_iter()
            .map(|r| Slab::new(model, &shared, *r))
            .collect();
        let mut allocation = Allocation::default();
        for s in &slabs {
            let a = s.allocation(&shared);
            allocation.add(&a);
        }

        let fluxes = !model.fluxes.is_empty();
        let ports = ports::PortPass::new(model.surface_ports(), &shared, &slabs);
        if let Some(p) = &ports {
            allocation.dispersive += (0..slabs.len()).map(|s| p.slab_bytes(s)).sum::<u64>();
            // A part of the grid (an MPI rank's) also holds its trades with the others.
            allocation.dispersive += p.crossing_bytes();
        }
        CpuBackend {
            ports,
            // Whole planes unless tuned (`fused::bands`).
            checkpoint_part_bytes: super::parts::FIELD_PART_BYTES,
            band_values: crate::tuning::tuning()
                .fused_band_bytes
                .map_or(usize::MAX, |bytes| bytes / std::mem::size_of::<T>()),
            shared,
            slabs,
            allocation,
            monitors: Monitors {
                probe_rows: Vec::new(),
                gathers: Vec::new(),
                flux: fluxes.then(|| crate::flux::FluxAccumulators::new(model)),
                flux_staging: if fluxes {
                    vec![T::ZERO; crate::flux::largest_plane(model)]
                } else {
                    Vec::new()
                },
                flux_read: written_zeros(crate::flux::sweep_read_len(model)),
                flux_read_step: None,
            },
        }
    }

    /// Hand a checkpoint the fields in parts of at most `bytes` (at least a plane) instead of
    /// [`super::parts::FIELD_PART_BYTES`]: for tests, which check that the parts add up to
    /// the whole state on grids far smaller than the default part.
    pub fn set_checkpoint_part_bytes(&mut self, bytes: usize) {
        self.checkpoint_part_bytes = bytes;
    }

    /// The vector ISA the plane updates run with ([`Isa::detect`] unless set).
    pub fn isa(&self) -> Isa {
        self.shared.isa
    }

    /// Run the plane updates with the vector ISA `isa` instead (tests and comparisons; the
    /// bits do not depend on it), if this CPU has it; else an error naming it.
    pub fn set_isa(&mut self, isa: Isa) -> Result<(), String> {
        if !isa.available() {
            return Err(format!("this CPU cannot run {isa} code"));
        }
        self.shared.isa = isa;
        Ok(())
    }

    /// Bytes of the monitor buffers this backend holds now, counted from the vectors'
    /// capacities: the gather buffers of queued snapshot regions (they grow to the largest
    /// region gathered and are reused), the flux planes' gather buffer and the flux DFT
    /// accumulators, and the queue of probe rows not yet drained. The allocation tests compare
    /// this with the plan's `monitors` after a run.
    pub fn monitor_buffer_bytes(&self) -> MonitorBuffers {
        let t = std::mem::size_of::<T>() as u64;
        let m = &self.monitors;
        MonitorBuffers {
            gathers: m.gathers.iter().map(|(_, v)| v.capacity() as u64 * t).sum(),
            flux: m.flux.as_ref().map_or(0, |f| f.bytes())
                + (m.flux_staging.capacity() + m.flux_read.capacity()) as u64 * t,
            probe_rows: 8 * m.probe_rows.capacity() as u64,
        }
    }

    /// The state of the dispersive pass, for diagnostics and tests (an energy balance needs
    /// the poles' currents): per group of dispersive cells, its E component, its material id
    /// and its pole state, `state_len` arrays of one value per cell back to back (per pole in
    /// order: J then P for Lorentz, J for Drude, P for Debye; in units of eps0).
    pub fn pole_state(&self) -> Vec<(Component, u8, Vec<T>)> {
        self.slabs
            .iter()
            .flat_map(|s| &s.dispersive)
            .map(|g| (Component::ALL[g.component], g.material, g.state.clone()))
            .collect()
    }

    fn slab_of(&self, x: usize) -> &Slab<T> {
        self.slabs
            .iter()
            .find(|s| s.range.x0 <= x && x < s.range.x1)
            .expect("x index inside the grid")
    }
}

impl<T: Real> Slab<T> {
    fn new(model: &Model, sh: &Shared<T>, range: SlabRange) -> Self {
        let (ny, nz) = (sh.ny, sh.nz);
        let plane = ny * nz;
        let n = range.len();
        let field = || written_zeros::<T>((n + 2) * plane);
        let mut mat = [
            vec![0u8; n * plane],
            vec![0u8; n * plane],
            vec![0u8; n * plane],
        ];
        for (c, m) in mat.iter_mut().enumerate() {
            model.paint_materials(Component::ALL[c], range.x0, range.x1, m);
        }
        let row_mat = mat.each_ref().map(|m| row_summary(m, nz));
        let magnetic = sh.hcoef.is_some();
        let mut hmat = [0; 3].map(|_| vec![0u8; if magnetic { n * plane } else { 0 }]);
        if magnetic {
            for (c, m) in hmat.iter_mut().enumerate() {
                model.paint_materials(Component::ALL[3 + c], range.x0, range.x1, m);
            }
        }
        let hrow_mat = hmat.each_ref().map(|m| row_summary(m, nz));
        let dispersive = dispersive::groups(model, sh, range, &mat);
        let pml_x_planes = sh.x_layer_planes(range.x0, range.x1);
        let nxp = pml_x_planes.len();
        let ly = sh.pml[1].layers();
        let lz = sh.pml[2].layers();
        let sources = model.sources_in(range.x0, range.x1);
        let magnetic = model.magnetic_sources_in(range.x0, range.x1);
        let weights = [&sources, &magnetic].map(|list| {
            list.iter()
                .map(|&(k, c, _)| {
                    model
                        .sheet_weights(k, !c.is_electric(), range.x0, range.x1)
                        .map(|w| w.into_iter().map(T::from_f64).collect())
                })
                .collect()
        });
        let tfsf = sh
            .tfsf
            .as_ref()
            .map_or(Vec::new(), |t| t.slab_groups(range.x0, range.x1, ny, nz));
        let incident = sh
            .tfsf
            .as_ref()
            .filter(|_| tfsf.iter().any(|g| !g.off.is_empty()))
            .map(tfsf::Incident::new);
        Slab {
            range,
            e: [field(), field(), field()],
            h: [field(), field(), field()],
            mat,
            row_mat,
            hmat,
            hrow_mat,
            dispersive,
            pml_x_planes,
            psi_x: [0; 4].map(|_| written_zeros(nxp * plane)),
            psi_y: [0; 4].map(|_| written_zeros(n * ly * nz)),
            psi_z: [0; 4].map(|_| written_zeros(n * ny * lz)),
            sources,
            magnetic,
            weights,
            tfsf,
            incident,
            cell_state: cells::states(model, range.x0..range.x1),
            conformal: sh.conformal.slab_faces(range.x0, range.x1, ny, nz),
        }
    }

    fn allocation(&self, _sh: &Shared<T>) -> Allocation {
        let t = std::mem::size_of::<T>() as u64;
        let len = |v: &Vec<T>| v.len() as u64 * t;
        let plane = (self.e[0].len() / (self.range.len() + 2)) as u64 * t;
        let with_halos: u64 = self.e.iter().chain(self.h.iter()).map(len).sum();
        let halos = 6 * 2 * plane;
        Allocation {
            fields: with_halos - halos,
            halos,
            materials: self
                .mat
                .iter()
                .chain(&self.hmat)
                .map(|m| m.len() as u64)
                .sum::<u64>()
                + self
                    .row_mat
                    .iter()
                    .chain(&self.hrow_mat)
                    .map(|m| 2 * m.len() as u64)
                    .sum::<u64>()
                + self.conformal.iter().map(|f| f.bytes()).sum::<u64>(),
            dispersive: self.dispersive.iter().map(|g| g.bytes()).sum(),
            pml: self
                .psi_x
                .iter()
                .chain(&self.psi_y)
                .chain(&self.psi_z)
                .map(len)
                .sum(),
            monitors: 0,
            sources: self.tfsf.iter().map(|g| g.bytes()).sum::<u64>()
                + self.incident.as_ref().map_or(0, |i| i.bytes())
                + self
                    .weights
                    .iter()
                    .flatten()
                    .flatten()
                    .map(len)
                    .sum::<u64>(),
            passes: self.cell_state.iter().map(len).sum(),
        }
    }

    /// Pass `pass` of half step `half` on this slab.
    fn run_pass(&mut self, sh: &Shared<T>, half: Half, pass: Pass, values: &[f64]) {
        let all = 1..self.range.len() + 1;
        let rows = 0..sh.ny;
        match (half, pass) {
            (Half::H, Pass::CurlCpml) => self.curl_cpml_h(sh),
            (Half::H, Pass::Conformal) => self.conformal(sh, all, rows),
            // The pair of engines of a Bloch cell runs it (`crate::backend::bloch`).
            (_, Pass::Bloch) => {}
            (Half::E, Pass::CurlCpml) => self.curl_cpml_e(sh),
            (Half::H, Pass::MagneticSources) => self.inject_magnetic(sh, values, all, rows),
            (Half::E, Pass::Sources) => self.inject(sh, values, all, rows),
            (Half::E, Pass::Dispersive) => {
                let plane = sh.ny * sh.nz;
                for g in &mut self.dispersive {
                    g.step(sh, &mut self.e[g.component][plane..]);
                }
            }
            (Half::E, Pass::PecFaces) => self.zero_pec_faces(sh, all, rows),
            (_, Pass::Tfsf) => {
                self.advance_incident(sh, half, values);
                self.tfsf(sh, half, all, rows, None);
            }
            (_, Pass::Cells) => {
                for p in all {
                    self.cells_on_plane(sh, half, p, rows.clone());
                }
            }
            (half, pass) => {
                unreachable!("no {} pass in the {} half step", pass.name(), half.name())
            }
        }
    }

    /// The H curl pass, H^{n-1/2} -> H^{n+1/2} without sources: per plane, the curl of E,
    /// then the CPML correction while the plane is still in cache.
    fn curl_cpml_h(&mut self, sh: &Shared<T>) {
        let plane = sh.ny * sh.nz;
        let n = self.range.len();
        let x0 = self.range.x0;
        let e = &self.e;
        let psi = plane_psi(
            sh,
            n,
            &self.pml_x_planes,
            &mut self.psi_x,
            &mut self.psi_y,
            &mut self.psi_z,
            2,
        );
        let [hx, hy, hz] = &mut self.h;
        let (hmat, hrow_mat) = (&self.hmat, &self.hrow_mat);
        let owned = plane..(n + 1) * plane;
        hx[owned.clone()]
            .par_chunks_mut(plane)
            .zip(hy[owned.clone()].par_chunks_mut(plane))
            .zip(hz[owned].par_chunks_mut(plane))
            .zip(psi.into_par_iter())
            .enumerate()
            .for_each(|(q, (((hx, hy), hz), psi))| {
                h_curl_cpml(sh, x0, q, e, 0..sh.ny, (hmat, hrow_mat), [hx, hy, hz], psi);
            });
    }

    /// The E curl pass, E^n -> E^{n+1} without sources: per plane, the curl of H and the CPML
    /// correction.
    fn curl_cpml_e(&mut self, sh: &Shared<T>) {
        let plane = sh.ny * sh.nz;
        let n = self.range.len();
        let x0 = self.range.x0;
        let h = &self.h;
        let (mat, row_mat) = (&self.mat, &self.row_mat);
        let psi = plane_psi(
            sh,
            n,
            &self.pml_x_planes,
            &mut self.psi_x,
            &mut self.psi_y,
            &mut self.psi_z,
            0,
        );
        let [ex, ey, ez] = &mut self.e;
        let owned = plane..(n + 1) * plane;
        ex[owned.clone()]
            .par_chunks_mut(plane)
            .zip(ey[owned.clone()].par_chunks_mut(plane))
            .zip(ez[owned].par_chunks_mut(plane))
            .zip(psi.into_par_iter())
            .enumerate()
            .for_each(|(q, (((ex, ey), ez), psi))| {
                e_curl_cpml(sh, x0, q, h, 0..sh.ny, (mat, row_mat), [ex, ey, ez], psi);
            });
    }

    /// E -= cb J over each source's cells on the rows `rows` of the local planes `planes`, cb
    /// of the cell's material.
    fn inject(
        &mut self,
        sh: &Shared<T>,
        source_values: &[f64],
        planes: Range<usize>,
        rows: Range<usize>,
    ) {
        let plane = sh.ny * sh.nz;
        for (&(s, c, cells), weights) in self.sources.iter().zip(&self.weights[0]) {
            let j = source_values[s];
            let ci = c as usize;
            for p in cells[0][0].max(planes.start)..cells[0][1].min(planes.end) {
                for y in cells[1][0].max(rows.start)..cells[1][1].min(rows.end) {
                    for z in cells[2][0]..cells[2][1] {
                        let local = (p - 1) * plane + y * sh.nz + z;
                        let cb = sh.coef[self.mat[ci][local] as usize].1;
                        let current = match weights {
                            None => T::from_f64(j),
                            Some(w) => T::from_f64(j) * w[sheet_cell(&cells, p, y, z)],
                        };
                        self.e[ci][p * plane + y * sh.nz + z] -= cb * current;
                    }
                }
            }
        }
    }

    /// H -= (dt / mu0) M over each magnetic sheet's cells on the rows `rows` of the local planes
    /// `planes` (H is in vacuum permeability everywhere, so the coefficient is the one `ch` of
    /// the H update).
    fn inject_magnetic(
        &mut self,
        sh: &Shared<T>,
        magnetic_values: &[f64],
        planes: Range<usize>,
        rows: Range<usize>,
    ) {
        let plane = sh.ny * sh.nz;
        for (&(s, c, cells), weights) in self.magnetic.iter().zip(&self.weights[1]) {
            let m = T::from_f64(magnetic_values[s]);
            let ci = c as usize % 3;
            for p in cells[0][0].max(planes.start)..cells[0][1].min(planes.end) {
                for y in cells[1][0].max(rows.start)..cells[1][1].min(rows.end) {
                    for z in cells[2][0]..cells[2][1] {
                        let current = match weights {
                            None => m,
                            Some(w) => m * w[sheet_cell(&cells, p, y, z)],
                        };
                        self.h[ci][p * plane + y * sh.nz + z] -= sh.ch * current;
                    }
                }
            }
        }
    }

    /// Tangential E = 0 on the PEC minimum faces this slab touches, on the rows `rows` of the
    /// local planes `planes`.
    fn zero_pec_faces(&mut self, sh: &Shared<T>, planes: Range<usize>, rows: Range<usize>) {
        let nz = sh.nz;
        let plane = sh.ny * nz;
        if sh.faces.zero_min_face[0] && self.range.x0 == 0 && planes.contains(&1) {
            for c in [1, 2] {
                self.e[c][plane + rows.start * nz..plane + rows.end * nz].fill(T::ZERO);
            }
        }
        for p in planes {
            if sh.faces.zero_min_face[1] && rows.contains(&0) {
                for c in [0, 2] {
                    self.e[c][p * plane..p * plane + nz].fill(T::ZERO);
                }
            }
            if sh.faces.zero_min_face[2] {
                for c in [0, 1] {
                    for j in rows.clone() {
                        self.e[c][p * plane + j * nz] = T::ZERO;
                    }
                }
            }
        }
    }
}

/// The H curl of the rows `rows` of owned plane `q` (local plane q + 1, global x0 + q) and its
/// CPML correction:
/// `h` the plane's three components, `hids` the H material ids and row summaries (empty
/// without magnetic materials). The one body of the two-pass and the fused H update.
#[allow(clippy::too_many_arguments)] // the plane, its rows, the fields, material ids and psi
fn h_curl_cpml<T: Real>(
    sh: &Shared<T>,
    x0: usize,
    q: usize,
    e: &[Vec<T>; 3],
    rows: Range<usize>,
    hids: (&[Vec<u8>; 3], &[Vec<u16>; 3]),
    h: [&mut [T]; 3],
    psi: cpml::PlanePsi<T>,
) {
    isa::with_isa!(
        sh.isa,
        h_curl_cpml_on,
        <T>,
        (
            sh: &Shared<T>,
            x0: usize,
            q: usize,
            e: &[Vec<T>; 3],
            rows: Range<usize>,
            hids: (&[Vec<u8>; 3], &[Vec<u16>; 3]),
            h: [&mut [T]; 3],
            psi: cpml::PlanePsi<T>,
        )
    )
}

/// [`h_curl_cpml`] for the ISA its caller was compiled for (see [`isa`]).
#[allow(clippy::too_many_arguments)] // the plane, its rows, the fields, material ids and psi
#[inline(always)]
fn h_curl_cpml_on<T: Real>(
    sh: &Shared<T>,
    x0: usize,
    q: usize,
    e: &[Vec<T>; 3],
    rows: Range<usize>,
    (hmat, hrow_mat): (&[Vec<u8>; 3], &[Vec<u16>; 3]),
    h: [&mut [T]; 3],
    psi: cpml::PlanePsi<T>,
) {
    let [hx, hy, hz] = h;
    let coef = |c: usize, j: usize| match &sh.hcoef {
        None => RowCoef::Uniform(T::ONE, sh.ch),
        Some(table) => row_coef(&hmat[c], &hrow_mat[c], table, q, j, sh),
    };
    if sh.nz == 1 {
        // A flat plane is a few rows of one cell: always updated whole (see the fused sweep).
        debug_assert_eq!(rows, 0..sh.ny);
        let ids = sh.hcoef.as_ref().map(|t| {
            let at = |c: usize| &hmat[c][q * sh.ny..(q + 1) * sh.ny];
            ([at(0), at(1), at(2)], t.as_slice())
        });
        h_plane_flat(sh, x0 + q, q + 1, e, ids, [&mut *hx, &mut *hy, &mut *hz]);
        cpml::h_plane(sh, q + 1, e, rows, &coef, [hx, hy, hz], psi);
    } else {
        h_plane(sh, x0 + q, q + 1, e, rows.clone(), &coef, hx, hy, hz);
        cpml::h_plane(sh, q + 1, e, rows, &coef, [hx, hy, hz], psi);
    }
}

/// The E curl of owned plane `q` and its CPML correction (see [`h_curl_cpml`]); `ids` are the
/// E material ids and row summaries.
#[allow(clippy::too_many_arguments)] // the plane, its rows, the fields, material ids and psi
fn e_curl_cpml<T: Real>(
    sh: &Shared<T>,
    x0: usize,
    q: usize,
    h: &[Vec<T>; 3],
    rows: Range<usize>,
    ids: (&[Vec<u8>; 3], &[Vec<u16>; 3]),
    e: [&mut [T]; 3],
    psi: cpml::PlanePsi<T>,
) {
    isa::with_isa!(
        sh.isa,
        e_curl_cpml_on,
        <T>,
        (
            sh: &Shared<T>,
            x0: usize,
            q: usize,
            h: &[Vec<T>; 3],
            rows: Range<usize>,
            ids: (&[Vec<u8>; 3], &[Vec<u16>; 3]),
            e: [&mut [T]; 3],
            psi: cpml::PlanePsi<T>,
        )
    )
}

/// [`e_curl_cpml`] for the ISA its caller was compiled for (see [`isa`]).
#[allow(clippy::too_many_arguments)] // the plane, its rows, the fields, material ids and psi
#[inline(always)]
fn e_curl_cpml_on<T: Real>(
    sh: &Shared<T>,
    x0: usize,
    q: usize,
    h: &[Vec<T>; 3],
    rows: Range<usize>,
    (mat, row_mat): (&[Vec<u8>; 3], &[Vec<u16>; 3]),
    e: [&mut [T]; 3],
    psi: cpml::PlanePsi<T>,
) {
    let (ny, nz) = (sh.ny, sh.nz);
    let [ex, ey, ez] = e;
    let coef = |c: usize, j: usize| row_coef(&mat[c], &row_mat[c], &sh.coef, q, j, sh);
    if nz == 1 {
        debug_assert_eq!(rows, 0..ny);
        let at = |c: usize| &mat[c][q * ny..(q + 1) * ny];
        let ids = [at(0), at(1), at(2)];
        let e = [&mut *ex, &mut *ey, &mut *ez];
        e_plane_flat(sh, x0 + q, q + 1, h, ids, &sh.coef, e);
        cpml::e_plane(sh, x0 + q, q + 1, h, rows, &coef, [ex, ey, ez], psi);
    } else {
        e_plane(sh, x0 + q, q + 1, h, rows.clone(), &coef, ex, ey, ez);
        cpml::e_plane(sh, x0 + q, q + 1, h, rows, &coef, [ex, ey, ez], psi);
    }
}

/// Per (plane, row) of `ids` (rows of `nz`): the row's id if all its cells share it, else
/// [`MIXED_ROW`].
fn row_summary(ids: &[u8], nz: usize) -> Vec<u16> {
    ids.chunks(nz)
        .map(|row| {
            if row.iter().all(|&v| v == row[0]) {
                row[0] as u16
            } else {
                MIXED_ROW
            }
        })
        .collect()
}

/// The coefficients of row j of owned plane q (0-based) of a component with ids `ids` and row
/// summary `rows`, from `table`.
fn row_coef<'a, T: Real>(
    ids: &'a [u8],
    rows: &[u16],
    table: &'a [(T, T)],
    q: usize,
    j: usize,
    sh: &Shared<T>,
) -> RowCoef<'a, T> {
    let rm = rows[q * sh.ny + j];
    if rm == MIXED_ROW {
        let start = (q * sh.ny + j) * sh.nz;
        RowCoef::PerCell(&ids[start..start + sh.nz], table)
    } else {
        let (ca, cb) = table[rm as usize];
        RowCoef::Uniform(ca, cb)
    }
}

/// Split the psi arrays of one field (E: `first` = 0, H: `first` = 2) into per-plane pieces
/// for the parallel plane loop.
fn plane_psi<'a, T: Real>(
    sh: &Shared<T>,
    n: usize,
    x_planes: &[(usize, usize)],
    psi_x: &'a mut [Vec<T>; 4],
    psi_y: &'a mut [Vec<T>; 4],
    psi_z: &'a mut [Vec<T>; 4],
    first: usize,
) -> Vec<cpml::PlanePsi<'a, T>> {
    let plane = sh.ny * sh.nz;
    let split = |v: &'a mut Vec<T>, per: usize| -> Vec<&'a mut [T]> {
        if per == 0 {
            (0..n).map(|_| <&mut [T]>::default()).collect()
        } else {
            v.chunks_mut(per).collect()
        }
    };
    let [xa, xb] = pair(psi_x, first);
    let [ya, yb] = pair(psi_y, first);
    let [za, zb] = pair(psi_z, first);
    let mut xa = xa.chunks_mut(plane.max(1));
    let mut xb = xb.chunks_mut(plane.max(1));
    let mut x: Vec<cpml::XLayerPsi<'a, T>> = (0..n).map(|_| None).collect();
    for &(p, l) in x_planes {
        x[p - 1] = Some((
            l,
            [xa.next().expect("psi plane"), xb.next().expect("psi plane")],
        ));
    }
    let y_per = sh.pml[1].layers() * sh.nz;
    let z_per = sh.ny * sh.pml[2].layers();
    let ys = split(ya, y_per).into_iter().zip(split(yb, y_per));
    let zs = split(za, z_per).into_iter().zip(split(zb, z_per));
    x.into_iter()
        .zip(ys.zip(zs))
        .map(|(x, ((y0, y1), (z0, z1)))| cpml::PlanePsi {
            x,
            y: [y0, y1],
            z: [z0, z1],
        })
        .collect()
}

/// Mutable access to arrays `first` and `first + 1` of four.
fn pair<T>(v: &mut [Vec<T>; 4], first: usize) -> [&mut Vec<T>; 2] {
    let [a, b, c, d] = v;
    if first == 0 {
        [a, b]
    } else {
        [c, d]
    }
}

impl<T: Real> Backend for CpuBackend<T> {
    type Real = T;

    fn run_pass(&mut self, half: Half, pass: Pass, values: &[f64]) {
        let sh = &self.shared;
        self.slabs
            .par_iter_mut()
            .for_each(|s| s.run_pass(sh, half, pass, values));
        // The surface ports are dispersive cells too, stepped over every slab at once.
        if let (Half::E, Pass::Dispersive, Some(ports)) = (half, pass, &mut self.ports) {
            ports.step(sh, &mut self.slabs);
        }
    }

    fn has_fused_step(&self) -> bool {
        // With surface ports too: they step after the sweep, one step at a time
        // (`fused_step`, `can_sweep_steps`).
        true
    }

    fn fused_sweep_is_per_slab(&self) -> bool {
        true
    }

    fn step_fused(&mut self, halos: &HaloPlan, magnetic_values: &[f64], source_values: &[f64]) {
        self.fused_step(halos, magnetic_values, source_values);
    }

    fn can_step_fused_many(&self, halos: &HaloPlan) -> bool {
        self.can_sweep_steps(halos)
    }

    fn step_fused_many(
        &mut self,
        halos: &HaloPlan,
        steps: &[(&[f64], &[f64])],
        first: usize,
        samples: &[(Component, [usize; 3])],
    ) {
        // The step among these at which a flux DFT samples, and its regions: read within the
        // sweep, added by the next `accumulate_flux`. The time loop ends a sweep before a
        // second one (`steps_until_monitors`).
        let read = self.monitors.flux.as_ref().and_then(|flux| {
            let mut due = (0..steps.len())
                .map(|k| (k, flux.regions_at(first + k)))
                .filter(|(_, regions)| !regions.is_empty());
            let read = due.next();
            assert!(due.next().is_none(), "one flux sample per sweep");
            read
        });
        debug_assert!(
            read.is_none() || self.monitors.flux_read_step.is_none(),
            "the last sweep's flux sample was added"
        );
        if self.can_sweep_steps(halos) {
            let at = read.as_ref().map(|(k, regions)| (*k, regions.as_slice()));
            self.fused_steps(halos, steps, samples, at);
        } else {
            for (k, &(magnetic, currents)) in steps.iter().enumerate() {
                self.fused_step(halos, magnetic, currents);
                self.queue_probes(samples);
                if let Some((_, regions)) = read.as_ref().filter(|(at, _)| *at == k) {
                    let mut buf = std::mem::take(&mut self.monitors.flux_read);
                    let mut o = 0;
                    for (c, r) in regions {
                        self.gather(*c, r, &mut buf[o..o + r.len()]);
                        o += r.len();
                    }
                    self.monitors.flux_read = buf;
                }
            }
        }
        self.monitors.flux_read_step = read.map(|(k, _)| first + k);
    }

    fn reads_flux_in_sweep(&self) -> bool {
        true
    }

    fn step_fused_h(
        &mut self,
        h_sources: &[HaloCopy],
        magnetic_values: &[f64],
        source_values: &[f64],
    ) {
        self.fused_early(h_sources, magnetic_values, source_values);
    }

    fn step_fused_planes(
        &mut self,
        h_sources: &[HaloCopy],
        magnetic_values: &[f64],
        source_values: &[f64],
        planes: std::ops::Range<usize>,
    ) {
        self.fused_sweep(h_sources, magnetic_values, source_values, planes);
    }

    fn step_fused_first_e(&mut self, source_values: &[f64]) {
        self.fused_first_e(source_values);
    }

    fn link_ports(
        &mut self,
        links: &dyn Fn() -> Box<dyn super::ports::PortLinks<T>>,
    ) -> Result<(), String> {
        if let Some(ports) = &mut self.ports {
            ports.link(links());
        }
        Ok(())
    }

    fn has_bloch_pass(&self) -> bool {
        true
    }

    fn x_planes(&self) -> std::ops::Range<usize> {
        let first = self.slabs.first().map_or(0, |s| s.range.x0);
        first..self.slabs.last().map_or(first, |s| s.range.x1)
    }

    fn has_bloch_sweep(&self) -> bool {
        self.ports.is_none()
    }

    fn bloch_fused_part(
        &mut self,
        im: &mut Self,
        part: super::FusedPart,
        h_sources: &[HaloCopy],
        values: [[&[f64]; 2]; 2],
    ) {
        match part {
            super::FusedPart::Early => Self::bloch_early(self, im, h_sources, values),
            super::FusedPart::Planes(planes) => {
                Self::bloch_sweep(self, im, h_sources, values, planes)
            }
            super::FusedPart::FirstE => Self::bloch_first_e(self, im, values),
        }
    }

    fn bloch_fused_steps(
        &mut self,
        im: &mut Self,
        halos: &HaloPlan,
        steps: &[[[&[f64]; 2]; 2]],
        samples: &[(Component, [usize; 3])],
    ) {
        Self::bloch_fused_steps(self, im, halos, steps, samples);
    }

    fn bloch_images(&mut self, half: Half, out: &mut Vec<T>) {
        self.read_bloch_images(half, out);
    }

    fn bloch_correct(&mut self, half: Half, own: &[T], other: &[T], imaginary: bool) {
        self.correct_bloch(half, own, other, imaginary);
    }

    fn exchange(&mut self, copies: &[HaloCopy]) {
        let plane = self.shared.ny * self.shared.nz;
        let mut buf = vec![T::ZERO; plane];
        for c in copies {
            let ci = c.component as usize % 3;
            let src = &self.slabs[c.src_slab];
            let sp = c.src_x - src.range.x0 + 1;
            let field = if c.component.is_electric() {
                &src.e[ci]
            } else {
                &src.h[ci]
            };
            buf.copy_from_slice(&field[sp * plane..(sp + 1) * plane]);
            if c.negate {
                buf.iter_mut().for_each(|v| *v = -*v);
            }
            let dst = &mut self.slabs[c.dst_slab];
            let dp = match c.dst_side {
                HaloSide::Left => 0,
                HaloSide::Right => dst.range.len() + 1,
            };
            let f = if c.component.is_electric() {
                &mut dst.e[ci]
            } else {
                &mut dst.h[ci]
            };
            f[dp * plane..(dp + 1) * plane].copy_from_slice(&buf);
        }
    }

    fn read_plane(&mut self, component: Component, slab: usize, x: usize, out: &mut [T]) {
        let plane = self.shared.ny * self.shared.nz;
        let s = &self.slabs[slab];
        let ci = component as usize % 3;
        let f = if component.is_electric() {
            &s.e[ci]
        } else {
            &s.h[ci]
        };
        let p = x - s.range.x0 + 1;
        out.copy_from_slice(&f[p * plane..(p + 1) * plane]);
    }

    fn write_halo(&mut self, component: Component, slab: usize, side: HaloSide, data: &[T]) {
        let plane = self.shared.ny * self.shared.nz;
        let s = &mut self.slabs[slab];
        let ci = component as usize % 3;
        let p = match side {
            HaloSide::Left => 0,
            HaloSide::Right => s.range.len() + 1,
        };
        let f = if component.is_electric() {
            &mut s.e[ci]
        } else {
            &mut s.h[ci]
        };
        f[p * plane..(p + 1) * plane].copy_from_slice(data);
    }

    fn sample(&self, component: Component, index: [usize; 3]) -> f64 {
        let s = self.slab_of(index[0]);
        let ci = component as usize % 3;
        let f = if component.is_electric() {
            &s.e[ci]
        } else {
            &s.h[ci]
        };
        let p = index[0] - s.range.x0 + 1;
        f[(p * self.shared.ny + index[1]) * self.shared.nz + index[2]].to_f64()
    }

    fn gather(&self, component: Component, region: &Region, out: &mut [T]) {
        let (ny, nz) = (self.shared.ny, self.shared.nz);
        let ci = component as usize % 3;
        let counts = region.counts();
        debug_assert_eq!(out.len(), counts.iter().product::<usize>());
        let per_x = counts[1] * counts[2];
        if per_x == 0 {
            return;
        }
        let gather_plane = |n: usize, out: &mut [T]| {
            let i = region.start[0] + n * region.stride[0];
            let s = self.slab_of(i);
            let f = if component.is_electric() {
                &s.e[ci]
            } else {
                &s.h[ci]
            };
            copy_plane_region(f, i - s.range.x0 + 1, [ny, nz], region, out);
        };
        out.chunks_mut(per_x)
            .enumerate()
            .for_each(|(n, out)| gather_plane(n, out));
    }

    fn queue_probes(&mut self, samples: &[(Component, [usize; 3])]) {
        for &(c, idx) in samples {
            let v = self.sample(c, idx);
            self.monitors.probe_rows.push(v);
        }
    }

    fn drain_probes(&mut self, out: &mut Vec<f64>, _wait: bool) {
        out.append(&mut self.monitors.probe_rows);
    }

    fn queue_gather(&mut self, component: Component, region: &Region) -> GatherTicket {
        let g = &mut self.monitors.gathers;
        let i = match g.iter().position(|(taken, _)| *taken) {
            Some(i) => i,
            None => {
                g.push((true, Vec::new()));
                g.len() - 1
            }
        };
        let mut buf = std::mem::take(&mut g[i].1);
        // Grow to the region exactly (not by doubling): the buffer ends as large as the largest
        // region, which is what the plan lists.
        buf.reserve_exact(region.len().saturating_sub(buf.len()));
        buf.resize(region.len(), T::ZERO);
        self.gather(component, region, &mut buf);
        self.monitors.gathers[i] = (false, buf);
        GatherTicket(i)
    }

    fn gather_ready(&self, _ticket: &GatherTicket) -> bool {
        true
    }

    fn take_gather(&mut self, ticket: GatherTicket) -> Option<&[T]> {
        let slot = &mut self.monitors.gathers[ticket.0];
        debug_assert!(!slot.0, "a ticket is taken once");
        slot.0 = true;
        Some(&slot.1)
    }

    fn accumulate_flux(&mut self, step: usize, dt: f64) {
        if let Some(mut flux) = self.monitors.flux.take() {
            let mut staging = std::mem::take(&mut self.monitors.flux_staging);
            let read = self.monitors.flux_read_step.take();
            if let Some(at) = read {
                debug_assert!(at <= step, "a sweep read step {at}, the loop is at {step}");
                // The planes as the sweep read them, region by region in `regions_at` order,
                // which is the order `accumulate` asks for them.
                let (values, next) = (&self.monitors.flux_read, std::cell::Cell::new(0));
                let from_sweep = |_: Component, r: &Region, out: &mut [T]| {
                    let o = next.get();
                    out.copy_from_slice(&values[o..o + r.len()]);
                    next.set(o + r.len());
                };
                flux.accumulate(from_sweep, at, dt, &mut staging);
            }
            if read != Some(step) {
                flux.accumulate(|c, r, out| self.gather(c, r, out), step, dt, &mut staging);
            }
            self.monitors.flux = Some(flux);
            self.monitors.flux_staging = staging;
        }
    }

    fn flux_dft(&mut self, index: usize) -> Option<crate::flux::FluxDft> {
        self.monitors.flux.as_mut().map(|f| f.dft(index))
    }

    fn flux_power(&mut self, index: usize) -> Option<Vec<f64>> {
        self.monitors.flux.as_mut().map(|f| f.power(index))
    }

    fn all_finite(&self) -> bool {
        let plane = self.shared.ny * self.shared.nz;
        self.slabs.par_iter().all(|s| {
            let n = s.range.len();
            s.e.iter()
                .chain(s.h.iter())
                .all(|f| f[plane..(n + 1) * plane].par_iter().all(|v| v.is_finite()))
        })
    }

    fn allocation(&self) -> Allocation {
        self.allocation
    }

    fn name(&self) -> String {
        "cpu".into()
    }

    fn export_state(&mut self) -> Option<super::State<T>> {
        Some(self.export())
    }

    fn state_shape(&mut self) -> Option<super::StateShape> {
        Some(self.shape())
    }

    fn write_state(
        &mut self,
        step: usize,
        sink: &mut dyn super::StateSink<T>,
    ) -> Result<bool, String> {
        self.write_parts(step, sink)?;
        Ok(true)
    }

    fn import_state_from(
        &mut self,
        read: &super::StateReader<'_, T>,
        halo_copies: &[HaloCopy],
    ) -> Result<(), String> {
        self.import_from(&|request| read(Some(request)), halo_copies)
    }

    fn import_state(
        &mut self,
        state: &super::State<T>,
        halo_copies: &[HaloCopy],
    ) -> Result<(), super::StateError> {
        self.import(state, halo_copies)
    }
}

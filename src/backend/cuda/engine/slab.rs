//! One slab's buffers on its GPU: their sizes (the CUDA side of the memory plan), the
//! x-CPML plane runs, and which planes a halo copy reads (boundary) or not (interior).

use super::super::args::Ptr;
use crate::backend::Allocation;
use crate::decomp::{HaloPlan, SlabRange};
use crate::model::{Component, Model};

/// Bytes the engine allocates for one slab, by category, and the array lengths behind them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlabSizes {
    /// Values per component with halos: (n + 2) ny nz.
    pub field_len: usize,
    /// Material ids per component: n ny nz.
    pub mat_len: usize,
    /// Material ids per H component: n ny nz when some material is magnetic, else 0.
    pub hmat_len: usize,
    /// Owned planes inside the x PML.
    pub x_planes: usize,
    /// Values per psi array along x, y, z.
    pub psi_len: [usize; 3],
    /// The dispersive pass's cells (a u32 index and E^n each) and pole state values, over the
    /// three E components.
    pub dispersive: DispersiveLen,
    /// TF/SF correction points of the slab and nodes of the 1-D grid
    /// ([`crate::plan::bytes::tfsf_bytes`]).
    pub tfsf: (u64, u64),
    /// The conformal PEC pass's cut faces in the slab, three H components together
    /// ([`crate::plan::bytes::conformal_face_bytes`] each).
    pub conformal_faces: u64,
    /// The mode sources' weights in the slab, electric and magnetic sheets together (values,
    /// [`crate::plan::Layout::sheet_weight_bytes`]).
    pub sheet_weights: u64,
    /// The cell passes' state and coefficient rows in the slab (values,
    /// [`crate::plan::Layout::gpu_cell_pass_values`]).
    pub cell_passes: u64,
    /// The Bloch pass's images of the slab (values, [`crate::plan::Layout::bloch_images`]):
    /// two buffers of this many, the set's own and the other set's.
    pub bloch_images: u64,
    /// The surface ports whose own edge lies in the slab
    /// ([`crate::plan::Layout::port_counts`]), counted with the dispersive pass.
    pub ports: crate::model::PortCounts,
    /// The surface ports' runs of `port_poles` in the slab, one group's arguments each
    /// ([`crate::plan::bytes::gpu_port_run_bytes`]).
    pub port_runs: u64,
}

/// The values of the mode sources' weights on the slab's planes, as the plan counts them
/// ([`crate::plan::Layout::sheet_weight_planes`]).
fn sheet_weight_values(layout: &crate::plan::Layout, range: SlabRange) -> u64 {
    let planes = &layout.sheet_weight_planes;
    planes
        .get(range.x0..range.x1.min(planes.len()))
        .unwrap_or(&[])
        .iter()
        .sum()
}

/// The lengths of a slab's dispersive arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DispersiveLen {
    /// Cells: one u32 index and one E^n value each.
    pub cells: u64,
    /// Pole state values.
    pub state: u64,
}

impl SlabSizes {
    /// The sizes for `range` of `model`: the plan's
    /// [`Layout::slab_lengths`](crate::plan::Layout::slab_lengths). (Builds the model's
    /// layout; [`SlabSizes::of`] takes one already built.)
    pub fn new(model: &Model, range: SlabRange) -> Self {
        SlabSizes::of(&crate::plan::Layout::of(model), range)
    }

    /// The sizes for `range` of the model `layout` describes: the array lengths of
    /// [`Layout::slab_lengths`](crate::plan::Layout::slab_lengths), the H ids when
    /// [`Layout::magnetic`](crate::plan::Layout::magnetic), and the dispersive cells of the
    /// slab's planes ([`Layout::dispersive_planes`](crate::plan::Layout::dispersive_planes)).
    pub fn of(layout: &crate::plan::Layout, range: SlabRange) -> Self {
        let l = layout.slab_lengths(range);
        let planes = &layout.dispersive_planes;
        let mut dispersive = DispersiveLen::default();
        // The plan counts (cells, cells + state values) per plane: E^n is one value per cell.
        for &(cells, values) in planes
            .get(range.x0..range.x1.min(planes.len()))
            .unwrap_or(&[])
        {
            dispersive.cells += cells;
            dispersive.state += values - cells;
        }
        SlabSizes {
            field_len: l.field_len,
            mat_len: l.mat_len,
            hmat_len: if layout.magnetic { l.mat_len } else { 0 },
            x_planes: l.x_planes,
            psi_len: l.psi_len,
            dispersive,
            tfsf: (layout.tfsf_points(range), layout.tfsf_nodes),
            conformal_faces: layout.conformal_faces(range),
            sheet_weights: sheet_weight_values(layout, range),
            cell_passes: layout.gpu_cell_pass_values(range),
            bloch_images: layout.bloch_images(range),
            ports: layout.port_counts(range),
            port_runs: layout.gpu_port_runs(range),
        }
    }

    /// Bytes by category for values of `real` bytes, monitors excluded.
    pub fn allocation(&self, plane: usize, real: usize) -> Allocation {
        let t = real as u64;
        let fields_with_halos = 6 * self.field_len as u64 * t;
        let halos = 6 * 2 * plane as u64 * t;
        let d = self.dispersive;
        Allocation {
            fields: fields_with_halos - halos,
            halos: halos + 2 * self.bloch_images * t,
            // The cut faces' tables are material data, as the plan counts them.
            materials: 3 * (self.mat_len + self.hmat_len) as u64
                + self.conformal_faces * crate::plan::bytes::conformal_face_bytes(real),
            pml: 4 * self.psi_len.iter().map(|&l| l as u64).sum::<u64>() * t,
            dispersive: 4 * d.cells
                + t * (d.cells + d.state)
                + self.ports.bytes(real)
                + self.port_runs * crate::plan::bytes::gpu_port_run_bytes(real),
            monitors: 0,
            sources: crate::plan::bytes::tfsf_bytes(self.tfsf.0, self.tfsf.1, real)
                + self.sheet_weights * t,
            // The cell passes' state, as on the CPU, and their coefficient rows.
            passes: self.cell_passes * t,
        }
    }
}

/// One dispersive group of a slab on its GPU (one E component, one material with poles): the
/// arrays of `cpu/dispersive.rs`'s `Group`, on the device.
#[derive(Debug, Clone)]
pub(super) struct DispersiveGroup {
    /// 0, 1, 2 for Ex, Ey, Ez.
    pub(super) component: usize,
    /// The material id (an index into the engine's pole tables).
    pub(super) material: u8,
    /// Cells in the group.
    pub(super) n: usize,
    /// u32 cell indices into the component's owned values, sorted.
    pub(super) cells: Ptr,
    /// E^n per cell.
    pub(super) e_prev: Ptr,
    /// The pole state, `[slot][cell]`.
    pub(super) state: Ptr,
    /// `plane_start[i]`: the first cell at or beyond owned plane i (0-based), for i in 0..=n
    /// planes: local planes [p0, p1) hold cells [plane_start[p0 - 1], plane_start[p1 - 1]).
    pub(super) plane_start: Vec<usize>,
}

/// One TF/SF correction group of a slab on its GPU: the arrays of
/// [`crate::operator::TfsfSlabGroup`], on the device.
#[derive(Debug, Clone)]
pub(super) struct TfsfGroup {
    /// 0..3 E, 3..6 H.
    pub(super) component: usize,
    /// u32 cell offsets, u32 1-D nodes, weights and factors, one per point.
    pub(super) off: Ptr,
    pub(super) node: Ptr,
    pub(super) w: Ptr,
    pub(super) fac: Ptr,
    /// `plane_start[i]`: the first point at or beyond owned plane i (0-based), i in 0..=n:
    /// local planes [p0, p1) hold points [plane_start[p0 - 1], plane_start[p1 - 1]).
    pub(super) plane_start: Vec<usize>,
}

/// The conformal PEC pass's cut faces of a slab on its GPU: the arrays of
/// [`crate::operator::ConformalSlabFaces`] of Hx, Hy and Hz, one after the other in one table.
#[derive(Debug, Clone)]
pub(super) struct ConformalFaces {
    /// u32 cell offsets among the owned cells, one per face.
    pub(super) off: Ptr,
    /// Four weights per face.
    pub(super) w: Ptr,
    /// Per H component: where its faces begin in the table.
    pub(super) base: [usize; 3],
    /// Per H component, `plane_start[i]`: its first face at or beyond owned plane i (0-based),
    /// i in 0..=n, counted from `base`: local planes [p0, p1) hold its faces
    /// [plane_start[p0 - 1], plane_start[p1 - 1]).
    pub(super) plane_start: [Vec<usize>; 3],
}

/// One cell pass of the model on a slab's GPU, by its device form
/// ([`crate::model::CellPass::kernel`], the lumped element kernel): the slab's part of its box
/// (its cells in C order), with the state and the coefficient rows of those cells.
#[derive(Debug, Clone)]
pub(super) struct CellGroup {
    /// The pass's name: its state is the array `NAME.state`.
    pub(super) name: String,
    /// 0..3 E, 3..6 H: the component it updates (and the half step it runs in).
    pub(super) component: usize,
    /// Its global box of cells, [start, end) along x, y, z.
    pub(super) cells: [[usize; 2]; 3],
    /// The box's global x planes in the slab, [x0, x1) (empty where it misses the slab).
    pub(super) x: [usize; 2],
    /// The box's cells in the slab.
    pub(super) n: usize,
    /// State values per cell.
    pub(super) slots: usize,
    /// The state, `[slot][cell]` (0 without cells).
    pub(super) state: Ptr,
    /// The coefficient rows, eight values per cell (0 without cells).
    pub(super) coef: Ptr,
    /// A series element (else parallel).
    pub(super) series: bool,
}

/// A run of consecutive x-PML planes in one slab: local planes [p0, p1), layer l0 at p0,
/// psi plane q0 at p0.
#[derive(Debug, Clone, Copy)]
pub(super) struct XRun {
    pub(super) p0: usize,
    pub(super) p1: usize,
    pub(super) l0: usize,
    pub(super) q0: usize,
}

/// One slab's device arrays (addresses on its GPU).
#[derive(Debug, Clone)]
pub(super) struct Slab {
    pub(super) range: SlabRange,
    pub(super) gpu: usize,
    /// Ex, Ey, Ez, Hx, Hy, Hz with halos.
    pub(super) f: [Ptr; 6],
    /// Material ids of Ex, Ey, Ez.
    pub(super) mat: [Ptr; 3],
    /// Material ids of Hx, Hy, Hz (0 unless some material is magnetic).
    pub(super) hmat: [Ptr; 3],
    /// The dispersive pass's groups, in the CPU backend's order.
    pub(super) dispersive: Vec<DispersiveGroup>,
    /// The TF/SF correction groups with points in this slab, in pass order.
    pub(super) tfsf: Vec<TfsfGroup>,
    /// This slab's copy of the TF/SF 1-D incident grid (e, h), when it holds points.
    pub(super) incident: Option<[Ptr; 2]>,
    /// The conformal PEC pass's cut faces, when the slab holds any.
    pub(super) conformal: Option<ConformalFaces>,
    /// psi arrays: x for Ey, Ez, Hy, Hz; y for Ex, Ez, Hx, Hz; z for Ex, Ey, Hx, Hy.
    pub(super) psi: [[Ptr; 4]; 3],
    pub(super) x_runs: Vec<XRun>,
    /// Sources touching this slab: (model source, component, local cell ranges).
    pub(super) sources: Vec<(usize, Component, [[usize; 2]; 3])>,
    /// Magnetic sheets touching this slab, likewise (H components).
    pub(super) magnetic: Vec<(usize, Component, [[usize; 2]; 3])>,
    /// Per entry of `sources`, then of `magnetic`: a mode source's weights over its cells in
    /// this slab (C order over the local cell ranges, [`Model::sheet_weights`]), 0 for a
    /// uniform sheet.
    pub(super) weights: [Vec<Ptr>; 2],
    /// The model's cell passes on this slab, in model order (one entry per pass, without cells
    /// where its box misses the slab).
    pub(super) cells: Vec<CellGroup>,
    /// The Bloch pass's images ([`super::bloch`]): this set's and the other set's buffers,
    /// 0 without a Bloch phase.
    pub(super) bloch_images: [Ptr; 2],
    /// Plane ranges [p0, p1) updated before (boundary) and after (interior) the halo copies
    /// start, per phase.
    pub(super) boundary: [Vec<(usize, usize)>; 2],
    pub(super) interior: [Vec<(usize, usize)>; 2],
}

/// Split planes 1..=n by `marked[p] == want` into ranges [p0, p1).
pub(super) fn plane_runs(marked: &[bool], want: bool) -> Vec<(usize, usize)> {
    let n = marked.len() - 2;
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (p, &m) in marked.iter().enumerate().take(n + 1).skip(1) {
        if m == want {
            match out.last_mut() {
                Some(r) if r.1 == p => r.1 = p + 1,
                _ => out.push((p, p + 1)),
            }
        }
    }
    out
}

/// Mark each slab's boundary planes (those a halo copy of the phase reads, and those `sent`
/// to another process after it: (slab, global x) per phase) and interior planes.
pub(super) fn mark_boundaries(
    slabs: &mut [Slab],
    plan: &HaloPlan,
    sent: &[Vec<(usize, usize)>; 2],
) {
    for (pi, copies) in [&plan.after_h, &plan.after_e].into_iter().enumerate() {
        for (s, slab) in slabs.iter_mut().enumerate() {
            let n = slab.range.len();
            let mut marked = vec![false; n + 2];
            for c in copies.iter().filter(|c| c.src_slab == s) {
                marked[c.src_x - slab.range.x0 + 1] = true;
            }
            for &(_, x) in sent[pi].iter().filter(|(slab, _)| *slab == s) {
                marked[x - slab.range.x0 + 1] = true;
            }
            slab.boundary[pi] = plane_runs(&marked, true);
            slab.interior[pi] = plane_runs(&marked, false);
        }
    }
}

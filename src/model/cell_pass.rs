//! Cell passes: physics that acts cell by cell on a box of one field component and keeps its
//! own state per cell, given to the model as an object instead of written into the engine.
//!
//! A cell pass declares what it acts on ([`CellPass::component`], [`CellPass::cells`]), how
//! much state it keeps per cell ([`CellPass::slots`]) and its update of one x plane of its box
//! ([`CellPass::update_plane`]). From that alone the engine allocates its state as the plan
//! counts it, runs it in the half step of its component (the `cells` pass of
//! [`crate::backend::pass`], after the additive corrections of that half and before the
//! dispersive poles), plane by plane in the fused sweeps and whole in the two-pass step, and
//! registers its state as the array `NAME.state`, so that checkpoints, resume and MPI parts
//! carry it without knowing what it is. `docs/architecture.md` has the recipe.
//!
//! On a GPU a pass runs only through a kernel the CUDA engine knows: it names one and hands it
//! its data with [`CellPass::kernel`] (for now the lumped RLC element's, `kernels/lumped.cu`).
//! A pass that names none (the default) keeps its scene on the CPU.
//!
//! The contract that makes every way of stepping give the same bits: the update of a cell
//! reads and writes only its own component at that cell and its own state there, in the run's
//! precision. It is called once per x plane (never per cell), for any subset of the plane's
//! rows the sweep is on, and must give the same result however the rows are split.

use super::{Component, Topology};

/// One x plane's part of a cell pass's box, as the engine hands it to
/// [`CellPass::update_plane`], in the run's precision: `field` is the whole plane of the
/// component (`ny * nz` values, z fastest) and `state` the slab's whole state array, slot by
/// slot (`[slot][cell]`, the slab's cells in x, y, z order); [`CellPlane::at`] finds a cell.
#[derive(Debug)]
pub struct CellPlane<'a, T> {
    /// The plane of the component.
    pub field: &'a mut [T],
    /// The slab's state array.
    pub state: &'a mut [T],
    /// The plane's global x index.
    pub x: usize,
    /// The rows (y) to update now: within the box, and within the rows the sweep is on.
    pub rows: std::ops::Range<usize>,
    /// The box's cells along z.
    pub z: std::ops::Range<usize>,
    /// Cells along z of a plane (the field's row length).
    pub nz: usize,
    /// The box's first row (y) of every plane.
    pub y0: usize,
    /// The state index of the box's first cell on this plane.
    pub first: usize,
    /// The slab's cells of the box (the stride between slots of `state`).
    pub cells: usize,
}

impl<T> CellPlane<'_, T> {
    /// (index into `field`, index of slot 0 in `state`) of cell (`y`, `z`) of the plane;
    /// slot `k` is at the second plus `k * cells`.
    pub fn at(&self, y: usize, z: usize) -> (usize, usize) {
        let width = self.z.end - self.z.start;
        (
            y * self.nz + z,
            self.first + (y - self.y0) * width + (z - self.z.start),
        )
    }
}

/// [`CellPlane`] in f32 or f64: a cell pass does its arithmetic in the run's precision.
#[derive(Debug)]
pub enum CellPlaneOf<'a> {
    /// An f32 run.
    F32(CellPlane<'a, f32>),
    /// An f64 run.
    F64(CellPlane<'a, f64>),
}

/// Physics applied cell by cell over a box of one component, with state per cell (see the
/// module documentation for the contract).
pub trait CellPass: std::fmt::Debug + Send + Sync {
    /// A name, unique among the model's cell passes: its state array is `NAME.state`.
    fn name(&self) -> &str;
    /// The component it updates: an E component runs in the E half step, an H one in H.
    fn component(&self) -> Component;
    /// Its cells: global cell indices [start, end) along x, y, z of the component's grid.
    fn cells(&self) -> [[usize; 2]; 3];
    /// State values per cell (0 for none).
    fn slots(&self) -> usize;
    /// Bytes it moves per cell and step besides its state (for the plan's time estimate):
    /// typically the field value read and written, 2 x the precision's bytes.
    fn field_bytes_per_cell(&self, real: usize) -> u64 {
        2 * real as u64
    }
    /// Update the cells of one x plane.
    fn update_plane(&self, plane: CellPlaneOf<'_>);
    /// Its device form, when the CUDA engine has a kernel for it: which kernel and the plain
    /// data the kernel reads (see `CellKernel`). `None` (the default) keeps the pass on the
    /// CPU: the plan runs a scene holding it there and the CUDA engine refuses it by name.
    fn kernel(&self) -> Option<CellKernel<'_>> {
        None
    }
}

/// A cell pass's device form ([`CellPass::kernel`]): a kernel of the CUDA engine and the data
/// it reads, plain values the engine uploads once per slab. The kernel must do the arithmetic
/// of [`CellPass::update_plane`] in the same order, so that the fields and the state are the
/// CPU backend's bit for bit. Adding a variant is adding a kernel (`docs/architecture.md`,
/// "A cell pass").
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CellKernel<'a> {
    /// `kernels/lumped.cu`: a lumped RLC element (`LumpedElement`).
    Lumped(LumpedKernel<'a>),
}

/// The data of the lumped element kernel ([`CellKernel::Lumped`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LumpedKernel<'a> {
    /// Parallel (state slots E^n, I_L) or series (E^n, I, q).
    pub topology: Topology,
    /// One row of update coefficients per cell of the pass's box, in C order over the box (x,
    /// then y, then z: the order of the state), as `LumpedElement`'s update reads them.
    pub coefficients: &'a [[f64; 8]],
}

impl<'a> CellKernel<'a> {
    /// Coefficient values per cell the device holds besides the state (in the run's
    /// precision): what the plan counts for the pass on a GPU.
    pub fn values_per_cell(&self) -> usize {
        match self {
            // One row of eight per cell.
            CellKernel::Lumped(_) => 8,
        }
    }

    /// The lumped element kernel's data, when this is that kernel. (A method rather than a
    /// match on the variant: `CellKernel` is named only inside `model`.)
    pub fn lumped(&self) -> Option<&LumpedKernel<'a>> {
        match self {
            CellKernel::Lumped(k) => Some(k),
        }
    }
}

/// The cells of the box `cells` (global [start, end) along x, y, z) within global x planes
/// [x0, x1): (the count, the x range). What a slab holds of a cell pass's box, for the backend
/// that allocates its state and the plan that counts it.
pub fn cells_within(cells: [[usize; 2]; 3], x0: usize, x1: usize) -> (usize, [usize; 2]) {
    let (a, b) = (cells[0][0].max(x0), cells[0][1].min(x1));
    if a >= b {
        return (0, [a, a]);
    }
    let per_plane =
        cells[1][1].saturating_sub(cells[1][0]) * cells[2][1].saturating_sub(cells[2][0]);
    ((b - a) * per_plane, [a, b])
}

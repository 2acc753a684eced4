//! The resolved simulation: everything on grid cells, in SI units, ready to allocate and step.
//!
//! A [`Model`] is built from a scene by [`crate::scene::resolve`] and never refers back to the
//! file. Coefficients are computed here once; backends only copy them.

mod geometry;
mod grid;
mod materials;
mod monitors;
mod pml;
mod sources;

pub use geometry::{Object, Shape};
pub use grid::{Axis, Component, Face, Grid, Precision, C0, EPS0, ETA0, MU0};
pub use materials::{Material, MaterialTable, UpdateCoefficients, MAX_MATERIALS};
pub use monitors::{Flux, Probe, Region, Snapshot};
pub use pml::{AxisProfile, Boundaries, BoundaryKind, PmlParams};
pub use sources::{Source, Waveform};

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
    /// What terminates each face, and the CPML profiles.
    pub boundaries: Boundaries,
    /// Current sources on grid cells.
    pub sources: Vec<Source>,
    /// Point probes.
    pub probes: Vec<Probe>,
    /// Snapshot monitors.
    pub snapshots: Vec<Snapshot>,
    /// Flux monitors.
    pub fluxes: Vec<Flux>,
}

impl Model {
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

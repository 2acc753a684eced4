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

/// A source's cells as one slab sees them: (model source index, component, cell ranges with x
/// in local plane numbers, where local plane 1 is the slab's first owned plane).
pub type SlabSource = (usize, Component, [[usize; 2]; 3]);

impl Model {
    /// The sources that touch global x planes `[x0, x1)`, clipped to them, with x in local plane
    /// numbers (plane 0 is the left halo).
    pub fn sources_in(&self, x0: usize, x1: usize) -> Vec<SlabSource> {
        self.sources
            .iter()
            .enumerate()
            .filter_map(|(k, src)| {
                let a = src.cells[0][0].max(x0);
                let b = src.cells[0][1].min(x1);
                (a < b).then(|| {
                    (
                        k,
                        src.component,
                        [[a - x0 + 1, b - x0 + 1], src.cells[1], src.cells[2]],
                    )
                })
            })
            .collect()
    }

    /// Paint the material ids of E component `c` over global x planes `[x0, x1)` into `out`
    /// (C order, `(x1 - x0) * ny * nz` ids, vacuum where no object is): objects in paint
    /// order, each only over the index box its bounds cover.
    pub fn paint_materials(&self, c: Component, x0: usize, x1: usize, out: &mut [u8]) {
        let g = &self.grid;
        let [_, ny, nz] = g.shape;
        let off = c.offset();
        for obj in &self.objects {
            let (lo, hi) = obj.bounds();
            let idx = |a: usize, x: f64| (x - g.origin[a]) / g.cell[a] - off[a];
            // Widen by 1e-6 of a cell so that nodes exactly on a face are tested, not skipped.
            let first = |a: usize| (idx(a, lo[a]) - 1e-6).ceil().max(0.0) as usize;
            let last = |a: usize, n: usize| {
                ((idx(a, hi[a]) + 1e-6).floor() + 1.0).clamp(0.0, n as f64) as usize
            };
            let (i0, i1) = (first(0).max(x0), last(0, g.shape[0]).min(x1));
            let (j0, j1) = (first(1), last(1, ny));
            let (k0, k1) = (first(2), last(2, nz));
            for i in i0..i1 {
                for j in j0..j1 {
                    for k in k0..k1 {
                        let p = g.position(c, [i as f64, j as f64, k as f64]);
                        if obj.contains(p) {
                            out[((i - x0) * ny + j) * nz + k] = obj.material;
                        }
                    }
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Painting by bounding boxes gives, cell by cell, what testing every cell against every
    /// object gives (the painter only skips cells outside an object's bounds).
    #[test]
    fn painting_matches_the_point_test_everywhere() {
        let text = r#"
[simulation]
cell_size = [0.05, 0.04, 0.03]
size = [1.0, 0.8, 0.6]
steps = 1
[boundaries]
default = { type = "pec" }
[materials]
a = { epsilon = 2.0 }
b = { epsilon = 3.0 }
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
material = "pec"
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
            assert!(nx > 16 && out.contains(&2) && out.contains(&3) && out.contains(&1));
        }
    }
}

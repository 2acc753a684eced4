//! Byte accounting: the one place that says how many bytes each allocation takes.
//!
//! [`slab_bytes`] is what a backend allocates for one slab (the CPU backend's own count of its
//! vectors is asserted equal to it in debug builds and in `tests/plan_alloc.rs`);
//! [`monitor_staging_len`] is the snapshot and flux-plane staging the CPU backend holds;
//! [`probe_series_bytes`] is what the HDF5 writer keeps of the probe time series.

use crate::backend::Allocation;
use crate::decomp::SlabRange;
use crate::model::{Model, Precision};

/// Bytes moved per cell and step by the two-pass update (design.md section 3): read E and H,
/// write H; read E and H, write E (18 field values), plus the three u8 material indices the E
/// update reads. 75 in f32, 147 in f64.
pub fn bytes_per_cell_step(precision: Precision) -> u64 {
    18 * precision.bytes() as u64 + 3
}

/// The facts about a model that its byte counts depend on, so that hypothetical variants (a
/// coarser cell, another precision) are counted by the same formulas.
#[derive(Debug, Clone, Copy, PartialEq)]
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
            flux_bytes: flux_bytes(model),
            probe_values_per_step: probe_values_per_step(model),
            steps: model.grid.steps as u64,
        }
    }

    /// The same layout in another precision.
    pub fn with_precision(self, precision: Precision) -> Layout {
        Layout { precision, ..self }
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
    /// - pml: four psi arrays per axis, over the owned cells inside that axis's layers.
    pub fn slab_bytes(&self, range: SlabRange) -> Allocation {
        let [nx, ny, nz] = self.shape.map(|n| n as u64);
        let p = self.precision.bytes() as u64;
        let n = range.len() as u64;
        let plane = ny * nz;
        let (xlo, xhi) = self.pml[0];
        let (x0, x1) = (range.x0 as u64, range.x1 as u64);
        let overlap = |a: u64, b: u64| b.min(x1).saturating_sub(a.max(x0));
        let x_layer_planes = overlap(0, xlo as u64) + overlap(nx - xhi as u64, nx);
        let ly = (self.pml[1].0 + self.pml[1].1) as u64;
        let lz = (self.pml[2].0 + self.pml[2].1) as u64;
        Allocation {
            fields: 6 * n * plane * p,
            halos: 6 * 2 * plane * p,
            materials: 3 * n * plane + 3 * 2 * n * ny,
            pml: 4 * p * (x_layer_planes * plane + n * ly * nz + n * ny * lz),
            monitors: 0,
        }
    }

    /// What the CUDA backend allocates on its GPU for the slab that owns `range`: as
    /// [`Layout::slab_bytes`] without the per-row material summaries (the GPU kernels look up
    /// every cell's id). Its monitor staging is counted separately, for the whole run.
    pub fn gpu_slab_bytes(&self, range: SlabRange) -> Allocation {
        let a = self.slab_bytes(range);
        Allocation {
            materials: 3 * range.len() as u64 * self.shape[1] as u64 * self.shape[2] as u64,
            ..a
        }
    }

    /// Bytes of the snapshot staging buffer.
    pub fn staging_bytes(&self) -> u64 {
        self.staging_values * self.precision.bytes() as u64 + self.flux_bytes
    }

    /// Bytes of the probe series the writer holds by the end of the run (f64 values).
    pub fn probe_series_bytes(&self) -> u64 {
        self.probe_values_per_step * self.steps * 8
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
/// plus the flux planes' gather buffer (the largest flux plane, 0 without flux monitors). They
/// are the `monitors` category with [`flux_bytes`]; `tests/plan_alloc.rs` compares them with
/// the CPU backend's buffers after a run.
pub fn monitor_staging_len(model: &Model) -> usize {
    model
        .snapshots
        .iter()
        .flat_map(|s| s.regions.iter().map(|(_, r)| r.len()))
        .max()
        .unwrap_or(0)
        + crate::flux::largest_plane(model)
}

/// Bytes the time loop holds for monitors in `precision`: the staging buffer plus the flux
/// monitors' DFT accumulators (f64) and their gather scratch (four f64 planes and one more).
pub fn monitor_staging_bytes(model: &Model, precision: Precision) -> u64 {
    monitor_staging_len(model) as u64 * precision.bytes() as u64 + flux_bytes(model)
}

/// Bytes of the flux monitors' host buffers: DFT accumulators and gather scratch.
pub fn flux_bytes(model: &Model) -> u64 {
    if model.fluxes.is_empty() {
        return 0;
    }
    8 * (crate::flux::accumulator_values(model) + 5 * crate::flux::largest_plane(model) as u64)
}

fn probe_values_per_step(model: &Model) -> u64 {
    let samples: usize = model.probes.iter().map(|p| p.components.len()).sum();
    if model.probes.is_empty() {
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
}

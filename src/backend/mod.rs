//! Backends: how a set of slabs is stored and stepped on one kind of hardware.
//!
//! The time loop ([`crate::run`]) and the halo plan ([`crate::decomp`]) are shared; a backend
//! only knows how to update its slabs, copy halo planes, inject sources and read fields back.

pub mod cpu;
/// The CUDA engine; without the `cuda` feature only its device-independent parts (the slab
/// engine the host-kernel tests drive) are built.
pub mod cuda;

use crate::decomp::HaloCopy;
use crate::model::{Component, Region};
use crate::real::Real;

/// Bytes allocated, by category (the memory plan lists the same categories).
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
    /// Monitor buffers held by the backend (probe samples, snapshot staging).
    pub monitors: u64,
}

impl Allocation {
    /// Sum of every category.
    pub fn total(&self) -> u64 {
        self.fields + self.halos + self.materials + self.pml + self.monitors
    }
    /// Category-wise sum.
    pub fn add(&mut self, other: &Allocation) {
        self.fields += other.fields;
        self.halos += other.halos;
        self.materials += other.materials;
        self.pml += other.pml;
        self.monitors += other.monitors;
    }
}

/// A set of slabs that together hold the whole grid, stepped in lock step.
pub trait Backend {
    /// The field value type.
    type Real: Real;

    /// Advance H by one step on every slab: H^{n-1/2} -> H^{n+1/2} (curl E, then CPML).
    fn update_h(&mut self);
    /// Advance E by one step on every slab: E^n -> E^{n+1} (curl H, CPML, then the source
    /// currents `source_values[s]` = J of model source `s` at t = (n + 1/2) dt, then PEC faces).
    fn update_e(&mut self, source_values: &[f64]);
    /// Replay a list of halo plane copies.
    fn exchange(&mut self, copies: &[HaloCopy]);
    /// The value of `component` at global index `index`.
    fn sample(&self, component: Component, index: [usize; 3]) -> f64;
    /// Copy the strided `region` of `component` into `out` (C order, `region.len()` values).
    fn gather(&self, component: Component, region: &Region, out: &mut [Self::Real]);
    /// False if any field value is NaN or infinite.
    fn all_finite(&self) -> bool;
    /// What this backend allocated, by category.
    fn allocation(&self) -> Allocation;
    /// A short name for output files and messages ("cpu", "cuda").
    fn name(&self) -> String;
}

//! Monitors on grid cells: point probes and snapshots.

use super::grid::{Axis, Component};

/// A time series of field values at one point.
///
/// Each component's value is a weighted sum of grid values around the point: trilinear
/// interpolation over the component's own (staggered) grid, or the nearest grid value.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Unique name; the HDF5 group.
    pub name: String,
    /// Requested position (m).
    pub position: [f64; 3],
    /// Interpolated (true) or the nearest grid value (false).
    pub interpolate: bool,
    /// The recorded components, in the scene's order.
    pub components: Vec<ProbeComponent>,
    /// Every grid value read each step: the stencil points of all components, in order.
    pub samples: Vec<(Component, [usize; 3])>,
}

/// One recorded component of a probe and how its value is formed from `Probe::samples`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeComponent {
    /// The field component.
    pub component: Component,
    /// The grid index nearest to the probe position for this component's staggering.
    pub nearest: [usize; 3],
    /// Index of this component's first stencil point in `Probe::samples`.
    pub first: usize,
    /// The stencil's weights, one per point from `first` on: trilinear (summing to 1), with
    /// the wall's zero or mirror image folded in next to a PEC or PMC face (see
    /// [`super::Grid::stencil`]).
    pub weights: Vec<f64>,
}

impl Probe {
    /// Combine one step's values of `samples` (in order) into one value per component,
    /// appended to `out`.
    pub fn combine(&self, samples: &[f64], out: &mut Vec<f64>) {
        for c in &self.components {
            let v = &samples[c.first..c.first + c.weights.len()];
            out.push(v.iter().zip(&c.weights).map(|(x, w)| x * w).sum());
        }
    }
}

/// A strided index box [start, end) along each axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// First index along x, y, z.
    pub start: [usize; 3],
    /// One past the last index.
    pub end: [usize; 3],
    /// Keep every n-th index along each axis.
    pub stride: [usize; 3],
}

impl Region {
    /// Samples along each axis.
    pub fn counts(&self) -> [usize; 3] {
        [0, 1, 2].map(|a| (self.end[a] - self.start[a]).div_ceil(self.stride[a]))
    }
    /// Total samples.
    pub fn len(&self) -> usize {
        self.counts().iter().product()
    }
    /// True if the region holds no samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Field snapshots of a plane, a box or the whole volume, every `every` steps.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Unique name; the HDF5 group.
    pub name: String,
    /// Components and the region each samples (planes are chosen per component, nearest to
    /// the requested coordinate for that component's staggering).
    pub regions: Vec<(Component, Region)>,
    /// Steps between snapshots.
    pub every: usize,
}

/// The net Poynting flux through a plane, as a spectrum: running DFTs of the tangential E and
/// H on the plane, combined as Re sum (E x H*) . n dA at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct Flux {
    /// Unique name; the HDF5 group.
    pub name: String,
    /// The plane's normal.
    pub axis: Axis,
    /// Index of the E node plane along `axis` (tangential E lies on it; tangential H is
    /// averaged from the planes half a cell either side). Between 1 and n - 1.
    pub index: usize,
    /// Frequencies of the spectrum (Hz).
    pub frequencies: Vec<f64>,
    /// Also store the DFT fields on the plane (complex, per frequency).
    pub fields: bool,
}

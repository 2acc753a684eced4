//! Monitors on grid cells: point probes and snapshots.

use super::grid::Component;
use super::space::Axis;

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

/// One rectangular patch of an E-node plane on which a surface DFT monitor ([`Flux`]) keeps
/// running DFTs of the tangential fields.
///
/// The plane is normal to `axis` at E-node index `index`; tangential E lies on it and
/// tangential H is averaged from the planes half a cell either side. In-plane, the patch holds
/// the cells `start[k] .. start[k] + count[k]` along the two in-plane axes in x, y, z order
/// (p < q); cell (u, v) holds both field pairs of the Yee cell there: (E_b, H_c) half a cell
/// along b, (E_c, H_b) half a cell along c, where (b, c) are the tangential axes in cyclic
/// order. A plane monitor is one patch over the whole plane; a closed box is six patches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Patch {
    /// The plane's normal axis.
    pub axis: Axis,
    /// Index of the E node plane along `axis`.
    pub index: usize,
    /// The outward normal's sign along `axis`: +1 (the +axis side, and every plane monitor) or
    /// -1 (the minimum face of a box).
    pub sign: f64,
    /// First cell along the two in-plane axes (x, y, z order).
    pub start: [usize; 2],
    /// Cells along the two in-plane axes.
    pub count: [usize; 2],
    /// A face of a closed box: its in-plane extent runs from E node `start` to E node
    /// `start + count - 1`, so the field pair that sits half a cell along an axis is used only
    /// in the first `count - 1` cells of that axis, and the pair on the nodes of an axis has
    /// half weight at both ends (the trapezoid rule: each edge of the box is shared by two
    /// faces, each integrating up to it). False for a plane monitor: every cell, weight 1.
    pub closed: bool,
}

impl Patch {
    /// The two in-plane axes in x, y, z order.
    pub fn in_plane(&self) -> [usize; 2] {
        let a = self.axis as usize;
        let (b, c) = ((a + 1) % 3, (a + 2) % 3);
        [b.min(c), b.max(c)]
    }
    /// Cells of the patch.
    pub fn cells(&self) -> usize {
        self.count[0] * self.count[1]
    }
    /// The patch's face name: `x_min`, ..., `z_max` for a box face, the axis for a plane.
    pub fn face_name(&self) -> String {
        let axis = self.axis.name();
        if !self.closed {
            axis.to_string()
        } else if self.sign < 0.0 {
            format!("{axis}_min")
        } else {
            format!("{axis}_max")
        }
    }
}

/// Angles of a far-field projection (degrees): theta from +z, phi from +x towards +y.
#[derive(Debug, Clone, PartialEq)]
pub struct FarField {
    /// Polar angles (degrees, in [0, 180]).
    pub theta: Vec<f64>,
    /// Azimuths (degrees).
    pub phi: Vec<f64>,
}

/// A surface DFT monitor: running DFTs of the tangential E and H on one plane (`type =
/// "flux"` with `plane`), on the six faces of a closed box (`type = "flux"` with `box`: the net
/// outward power), or on a closed box projected to the far field (`type = "far_field"`). The
/// flux is Re sum over the patches of sign (E x H*) . n dA, formed at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct Flux {
    /// Unique name; the HDF5 group.
    pub name: String,
    /// The patches: one whole plane, or a box's six faces in the order x_min, x_max, y_min,
    /// y_max, z_min, z_max.
    pub patches: Vec<Patch>,
    /// Frequencies of the spectrum (Hz).
    pub frequencies: Vec<f64>,
    /// Also store the DFT fields on the patches (complex, per frequency).
    pub fields: bool,
    /// A far-field monitor's angles (`None` for a flux monitor).
    pub far_field: Option<FarField>,
    /// The DFTs are sampled every `decimation` steps (>= 1), each sample weighed by
    /// `decimation dt` ([`crate::flux`]): within the Nyquist limit of the sources' band, the
    /// spectrum is the same to the DFT's accuracy.
    pub decimation: usize,
    /// A mode monitor's decomposition (`type = "mode"`, one plane patch): its DFTs are read
    /// back like `fields` and split into mode amplitudes ([`crate::modes::decompose`]).
    pub mode: Option<std::sync::Arc<super::ModeMonitor>>,
    /// A diffraction monitor's orders (`type = "diffraction"`, one plane across a periodic
    /// cell): its DFTs are read back and split into the cell's diffraction orders
    /// ([`crate::diffraction`]).
    pub diffraction: Option<std::sync::Arc<Diffraction>>,
}

/// A diffraction monitor (`type = "diffraction"`): a plane across the whole periodic cell
/// whose complex DFT fields split into the cell's Floquet orders, each order's power a
/// fraction of the incident plane wave's.
#[derive(Debug)]
pub struct Diffraction {
    /// Where the scene asked for it, for messages.
    pub place: String,
    /// The orders (m, n) along the plane's two in-plane axes (x, y, z order) that propagate
    /// at some frequency of the monitor, in increasing m then n.
    pub orders: Vec<[i64; 2]>,
    /// The Bloch wavevector along the two in-plane axes (rad/m): an order's transverse
    /// wavevector is this plus 2 pi (m / L_p, n / L_q).
    pub bloch_k: [f64; 2],
    /// The material at the plane, whose index decides which orders propagate and at what
    /// angle.
    pub material: u8,
    /// +1 where the monitor counts power along +axis, -1 along -axis: away from the source's
    /// sheet (transmitted ahead of it, reflected behind it).
    pub toward: f64,
    /// The model source whose incident power normalises the orders (a one-way plane wave
    /// whose sheet is parallel to the plane).
    pub source: usize,
    /// The incident wave as measured at run start on a column of the source's medium
    /// ([`Model::incident_column`](super::Model::incident_column), [`crate::run::incident`]).
    pub incident: std::sync::OnceLock<Incident>,
}

/// A diffraction monitor's incident wave, from its column run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Incident {
    /// The incident power (in the flux's units) through the whole cell, per frequency.
    pub power: Vec<f64>,
    /// For a monitor on the source's side of the structure (counting power towards the
    /// source), the source's own field at its plane, per frequency: the order (0, 0)
    /// amplitudes of E_b, E_c, H_b, H_c ([`crate::diffraction`]) that the monitor removes
    /// from its own, so that it counts only what the structure sends back (the incident wave
    /// and what a one-way sheet leaks behind it off its centre frequency). Empty for a monitor
    /// ahead of the structure.
    pub direct: Vec<[(f64, f64); 4]>,
}

impl PartialEq for Diffraction {
    fn eq(&self, other: &Self) -> bool {
        self.place == other.place
            && self.orders == other.orders
            && self.bloch_k == other.bloch_k
            && self.material == other.material
            && self.toward == other.toward
            && self.source == other.source
    }
}

impl Flux {
    /// The result file's group its `/<root>/<name>/` lies in: `modes`, `far_field`,
    /// `diffraction` or `flux`.
    pub fn group_root(&self) -> &'static str {
        match (&self.mode, &self.far_field, &self.diffraction) {
            (Some(_), _, _) => "modes",
            (_, Some(_), _) => "far_field",
            (_, _, Some(_)) => "diffraction",
            _ => "flux",
        }
    }

    /// The name of its total-flux spectrum in its group: `power`, or `flux` in a diffraction
    /// group, whose `power` is per order.
    pub fn total_name(&self) -> &'static str {
        if self.diffraction.is_some() {
            "flux"
        } else {
            "power"
        }
    }

    /// True for a closed box (six patches).
    pub fn is_box(&self) -> bool {
        self.patches.iter().all(|p| p.closed)
    }

    /// A closed box's E-node planes (lo, hi) along each axis, from its faces; None for a plane.
    pub fn box_planes(&self) -> Option<([usize; 3], [usize; 3])> {
        if !self.is_box() || self.patches.is_empty() {
            return None;
        }
        let (mut lo, mut hi) = ([usize::MAX; 3], [0usize; 3]);
        for p in &self.patches {
            let a = p.axis as usize;
            lo[a] = lo[a].min(p.index);
            hi[a] = hi[a].max(p.index);
            // The in-plane extent gives the other axes' bounds (node start .. start + count - 1).
            for (k, b) in p.in_plane().into_iter().enumerate() {
                lo[b] = lo[b].min(p.start[k]);
                hi[b] = hi[b].max(p.start[k] + p.count[k] - 1);
            }
        }
        Some((lo, hi))
    }
}

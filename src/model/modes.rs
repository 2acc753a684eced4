//! Mode sources and mode monitors as the model holds them: where their plane lies and which
//! modes they take. The modes themselves are solved at run start ([`crate::modes::prepare`],
//! a second or so per plane that `yee check` and `yee plan` do without) into the `OnceLock`s
//! here, which the backends and the writer then read.

use super::{Axis, Patch};
use std::sync::OnceLock;

/// Which mode a mode source launches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ModeChoice {
    /// By index, highest n_eff first (0 is the fundamental).
    Index(usize),
    /// The mode whose n_eff is nearest this.
    Neff(f64),
}

/// A rectangle of a grid node plane: the node plane `index` normal to `axis`, cells
/// `ranges` along the in-plane axes (u, v) = (axis + 1, axis + 2) mod 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModePlane {
    /// The normal (0, 1, 2 for x, y, z).
    pub axis: usize,
    /// The E node plane along it.
    pub index: usize,
    /// Cells [start, end) along u and v.
    pub ranges: [[usize; 2]; 2],
}

impl ModePlane {
    /// The in-plane axes (u, v) = (axis + 1, axis + 2) mod 3.
    pub fn in_plane(&self) -> [usize; 2] {
        [(self.axis + 1) % 3, (self.axis + 2) % 3]
    }

    /// The surface monitor patch over this plane's rectangle (in-plane axes in x, y, z order).
    pub fn patch(&self) -> Patch {
        let [u, v] = self.in_plane();
        let (start, count) = if u < v {
            (
                [self.ranges[0][0], self.ranges[1][0]],
                [
                    self.ranges[0][1] - self.ranges[0][0],
                    self.ranges[1][1] - self.ranges[1][0],
                ],
            )
        } else {
            (
                [self.ranges[1][0], self.ranges[0][0]],
                [
                    self.ranges[1][1] - self.ranges[1][0],
                    self.ranges[0][1] - self.ranges[0][0],
                ],
            )
        };
        Patch {
            axis: Axis::ALL[self.axis],
            index: self.index,
            sign: 1.0,
            start,
            count,
            closed: false,
        }
    }

    /// The plane of a plane monitor's patch.
    pub fn of_patch(patch: &Patch) -> ModePlane {
        let axis = patch.axis as usize;
        let r = |k: usize| [patch.start[k], patch.start[k] + patch.count[k]];
        let ranges = if (axis + 1) % 3 < (axis + 2) % 3 {
            [r(0), r(1)]
        } else {
            [r(1), r(0)]
        };
        ModePlane {
            axis,
            index: patch.index,
            ranges,
        }
    }
}

/// A mode source (`type = "mode"`): a one-way Huygens sheet pair with the mode's profile, two
/// model [`super::Source`]s (J on E_u with M on H_v, and J on E_v with M on H_u) sharing it.
#[derive(Debug, PartialEq)]
pub struct ModeSheet {
    /// The source's (port) name.
    pub name: String,
    /// Where the scene asked for it, for messages: `FILE:LINE: source[i].mode` (quoted).
    pub place: String,
    /// The E plane of the electric sheet.
    pub plane: ModePlane,
    /// +1 along +axis, -1 along -axis.
    pub sign: i32,
    /// The H plane (cell index along the axis) of the magnetic sheet, half a cell upstream.
    pub behind: usize,
    /// Which mode.
    pub choice: ModeChoice,
    /// The frequency (Hz) the profile is solved at: the waveform's centre, or one of a
    /// broadband source's interpolation nodes.
    pub frequency: f64,
    /// The waveform's centre frequency (Hz): a broadband source's profiles at its nodes take
    /// the sign that couples them positively to the mode there, so they interpolate smoothly.
    pub centre: f64,
    /// The lowest frequency (Hz) of the source's band, where the mode must still carry power.
    pub band_low: f64,
    /// The solved profile, filled once at run start.
    pub solved: OnceLock<SolvedSheet>,
}

/// A mode source's solved profile ([`ModeSheet`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SolvedSheet {
    /// The mode's index (highest n_eff first) and n_eff in the 3-D grid at the centre frequency.
    pub index: usize,
    /// Its n_eff.
    pub neff: f64,
    /// The electric sheets lead the magnetic ones by the mode's travel time over half a cell at
    /// the centre frequency (s).
    pub advance: f64,
    /// Per role (0: E_u with H_v, 1: E_v with H_u): the J weights over the electric sheet's
    /// cells (A/m^2 per V/m of `amplitude`, C order of the cell box) and the M weights over the
    /// magnetic sheet's cells (V/m^2 per V/m).
    pub weights: [[Vec<f64>; 2]; 2],
}

/// A mode monitor (`type = "mode"`): a flux plane decomposed onto the plane's first `count`
/// modes at each of its frequencies.
#[derive(Debug, PartialEq)]
pub struct ModeMonitor {
    /// Where the scene asked for it, for messages.
    pub place: String,
    /// Modes to decompose onto.
    pub count: usize,
    /// The plane's modes per frequency, as the monitor sees them, filled once at run start.
    pub basis: OnceLock<Vec<PlaneBasis>>,
    /// The path each mode's voltage is integrated along, if the scene gave one.
    pub voltage: Option<VoltagePath>,
}

/// A straight voltage path across a mode monitor's plane: V = sum of E along the path times
/// each cell's length, over the monitor's own E samples ([`BasisMode::e`]).
#[derive(Debug, Clone, PartialEq)]
pub struct VoltagePath {
    /// Per cell of the path: (which tangential E of [`BasisMode::e`], the patch cell's index,
    /// its length along the path (m), signed: negative where the path runs against the axis).
    pub cells: Vec<(usize, usize, f64)>,
    /// The cell along the plane's normal (m), across which the monitor averages H.
    pub step: f64,
}

impl VoltagePath {
    /// Each mode's characteristic impedance V^2 / P (ohm) from the unit-power `basis`: the
    /// power-voltage definition (openEMS's and Tidy3D's for TEM lines; P = V I = V^2 / Z0 there).
    /// The basis is at unit power as the monitor sees it, with H averaged from the H planes
    /// either side (a factor cos(beta d / 2), [`crate::modes`]), so the power the mode carries
    /// at its own H positions is 1 / cos(beta d / 2) and Z0 = V^2 cos(beta d / 2): a TEM line's
    /// eta h / w to rounding on any grid (not 1 % high at 20 cells a wavelength).
    pub fn impedance(&self, basis: &PlaneBasis) -> Vec<f64> {
        basis
            .modes
            .iter()
            .map(|m| {
                let v: f64 = self.cells.iter().map(|&(c, i, d)| m.e[c][i] * d).sum();
                let beta = 2.0 * std::f64::consts::PI * basis.frequency * m.neff / super::C0;
                v * v * (0.5 * beta * self.step).cos()
            })
            .collect()
    }
}

/// One mode as a plane monitor sees it, at unit power.
#[derive(Debug, Clone, PartialEq)]
pub struct BasisMode {
    /// The effective index in the 3-D grid (0 below cutoff).
    pub neff: f64,
    /// The power loss along the normal (dB/m): 0 in a lossless plane.
    pub loss: f64,
    /// Tangential E_u and E_v per cell of the monitor's patch (its C order over the in-plane
    /// axes in x, y, z order), scaled to unit power in the units of the plane's flux.
    pub e: [Vec<f64>; 2],
    /// Tangential H_u and H_v as the monitor interpolates them onto its E plane, likewise.
    pub h: [Vec<f64>; 2],
}

/// The modes of a plane at one frequency, as its monitor sees them.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaneBasis {
    /// The frequency (Hz).
    pub frequency: f64,
    /// The modes, highest n_eff first.
    pub modes: Vec<BasisMode>,
}

/// `[sparameters]`: the ports of the device's S-matrix, one run per port.
#[derive(Debug, Clone, PartialEq)]
pub struct SParameters {
    /// The port names, in the matrix's order: each a mode source (its excitation) and a mode
    /// monitor (what goes in and out there) of that name.
    pub ports: Vec<String>,
    /// The Touchstone file's reference impedance (ohm).
    pub reference_impedance: f64,
}

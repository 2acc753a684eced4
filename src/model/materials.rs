//! Materials and their E-update coefficients.
//!
//! Each E component of each cell stores a one-byte index into this table, not per-cell floats:
//! bytes per cell set the speed of a bandwidth-bound code.

use super::grid::EPS0;

/// At most this many materials (the index is one byte).
pub const MAX_MATERIALS: usize = 256;

/// A material as the solver sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Material {
    /// Name from the scene (`vacuum` for index 0).
    pub name: String,
    /// Relative permittivity.
    pub epsilon: f64,
    /// Conductivity in S/m.
    pub conductivity: f64,
    /// Perfect electric conductor: E is held at zero.
    pub pec: bool,
}

/// The update `E <- ca * E + cb * (curl H - J)` for one material.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UpdateCoefficients {
    /// Decay factor of E over one step.
    pub ca: f64,
    /// Gain from curl H (and the source current): units of dt / eps.
    pub cb: f64,
}

/// Materials indexed by their one-byte id; index 0 is vacuum.
#[derive(Debug, Clone, PartialEq)]
pub struct MaterialTable {
    /// The materials, index = id.
    pub materials: Vec<Material>,
}

impl MaterialTable {
    /// A table holding only vacuum.
    pub fn vacuum() -> Self {
        MaterialTable {
            materials: vec![Material {
                name: "vacuum".into(),
                epsilon: 1.0,
                conductivity: 0.0,
                pec: false,
            }],
        }
    }

    /// The id of `name`, if present.
    pub fn id(&self, name: &str) -> Option<u8> {
        self.materials
            .iter()
            .position(|m| m.name == name)
            .map(|i| i as u8)
    }

    /// Add a material and return its id (the caller checks the table size).
    pub fn push(&mut self, m: Material) -> u8 {
        self.materials.push(m);
        (self.materials.len() - 1) as u8
    }

    /// Coefficients for every material at time step `dt`.
    ///
    /// Conductivity uses the semi-implicit (time-averaged) form, stable for any sigma:
    /// ca = (1 - s)/(1 + s), cb = (dt/eps)/(1 + s) with s = sigma dt / (2 eps).
    pub fn coefficients(&self, dt: f64) -> Vec<UpdateCoefficients> {
        self.materials
            .iter()
            .map(|m| {
                if m.pec {
                    return UpdateCoefficients { ca: 0.0, cb: 0.0 };
                }
                let eps = EPS0 * m.epsilon;
                let s = m.conductivity * dt / (2.0 * eps);
                UpdateCoefficients {
                    ca: (1.0 - s) / (1.0 + s),
                    cb: (dt / eps) / (1.0 + s),
                }
            })
            .collect()
    }

    /// The largest relative permittivity (sets the shortest wavelength).
    pub fn max_epsilon(&self) -> f64 {
        self.materials
            .iter()
            .filter(|m| !m.pec)
            .map(|m| m.epsilon)
            .fold(1.0, f64::max)
    }
}

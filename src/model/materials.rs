//! Materials and their update coefficients.
//!
//! Each E component of each cell stores a one-byte index into this table, not per-cell floats:
//! bytes per cell set the speed of a bandwidth-bound code. H components get indices of their
//! own only when some material is magnetic.

use super::dispersion::{AdeMaterial, Pole};
use super::space::{EPS0, MU0};
use num_complex::Complex64;

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
    /// For a PEC: its surfaces are conformal (cut faces, [`super::Conformal`]) rather than
    /// staircased. False for every other material.
    pub conformal: bool,
    /// Relative permeability.
    pub mu: f64,
    /// Magnetic conductivity in ohm/m (magnetic loss on the H update).
    pub magnetic_conductivity: f64,
    /// Poles of the permittivity beyond `epsilon` (its eps_inf), in scene order.
    pub poles: Vec<Pole>,
    /// For a library material: the band (Hz) where its fit holds.
    pub band: Option<[f64; 2]>,
    /// A mixture that subpixel smoothing made, not a material of the scene.
    pub mixture: bool,
    /// For a series mixture (the smoothing of a dispersive interface for a component with a
    /// share normal to it, [`super::Smoothing`]): its parts and their weights, summing to 1.
    /// Every part is driven by the same curl H (the same D, as layers in series are) and the
    /// cell's E is the weighted mean of the parts' E, so `1/eps = sum w / eps_part` at every
    /// frequency. Empty for every other material.
    pub series: Vec<(Material, f64)>,
}

impl Material {
    /// A plain dielectric: `epsilon`, `conductivity`, no poles, not magnetic.
    pub fn dielectric(name: &str, epsilon: f64, conductivity: f64) -> Material {
        Material {
            name: name.into(),
            epsilon,
            conductivity,
            pec: false,
            conformal: false,
            mu: 1.0,
            magnetic_conductivity: 0.0,
            poles: Vec::new(),
            band: None,
            mixture: false,
            series: Vec::new(),
        }
    }

    /// True when the material has poles (it needs the dispersive pass).
    pub fn is_dispersive(&self) -> bool {
        !self.poles.is_empty() || !self.series.is_empty()
    }

    /// State values per cell the dispersive pass keeps for the material besides E^n: its
    /// poles' (J and P for Lorentz, J for Drude, P for Debye) or, for a series mixture, per
    /// part its E and its poles'.
    pub fn pole_state_len(&self) -> usize {
        let own: usize = self.poles.iter().map(|p| p.state_len()).sum();
        own + self
            .series
            .iter()
            .map(|(part, _)| 1 + part.pole_state_len())
            .sum::<usize>()
    }

    /// True when subpixel smoothing leaves the material's interfaces staircased: a PEC (it has
    /// no permittivity to average; conformal PEC is another scheme). Dispersive materials are
    /// smoothed: their poles weighted by the fill fraction ([`super::Smoothing`]).
    pub fn staircased(&self) -> bool {
        self.pec
    }

    /// True when the material changes the H update (mu != 1 or a magnetic conductivity).
    pub fn is_magnetic(&self) -> bool {
        self.mu != 1.0 || self.magnetic_conductivity != 0.0
    }

    /// The refractive index a plane wave sees at frequency `f` (Hz): the square root of the
    /// real part of [`Material::epsilon_at`] (0 where that is negative), 1 for a PEC (whose
    /// index nothing propagates in). What decides which diffraction orders propagate.
    pub fn index_at(&self, f: f64) -> f64 {
        if self.pec {
            1.0
        } else {
            self.epsilon_at(f).re.max(0.0).sqrt()
        }
    }

    /// The relative permittivity at frequency `f` (Hz), e^{-iwt} convention: epsilon plus
    /// every pole plus i sigma / (w eps0). Infinite for a PEC.
    pub fn epsilon_at(&self, f: f64) -> Complex64 {
        if self.pec {
            return Complex64::new(f64::INFINITY, 0.0);
        }
        if !self.series.is_empty() {
            let inverse: Complex64 = self.series.iter().map(|(m, w)| *w / m.epsilon_at(f)).sum();
            return 1.0 / inverse;
        }
        let w = 2.0 * std::f64::consts::PI * f;
        let mut eps = Complex64::new(self.epsilon, self.conductivity / (w * EPS0));
        for p in &self.poles {
            eps += p.susceptibility(f);
        }
        eps
    }

    /// The relative permeability at frequency `f` (Hz): mu + i sigma_m / (w mu0).
    pub fn mu_at(&self, f: f64) -> Complex64 {
        let w = 2.0 * std::f64::consts::PI * f;
        Complex64::new(self.mu, self.magnetic_conductivity / (w * MU0))
    }
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
            materials: vec![Material::dielectric("vacuum", 1.0, 0.0)],
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
    /// Conductivity uses the exponential (exponential time differencing) form, the exact
    /// solution of eps dE/dt = -sigma E + curl H over one step with curl H held at its
    /// mid-step value: ca = exp(-x), cb = (1 - ca) / sigma with x = sigma dt / eps. Unlike the
    /// semi-implicit form ca = (1 - x/2) / (1 + x/2), cb = (dt/eps) / (1 + x/2), whose ca tends
    /// to -1 for a good conductor and leaves a residual that flips sign every step, ca stays in
    /// (0, 1] and the field in a conductor decays monotonically. The two forms agree to O(x^2)
    /// (ca: 1 - x + x^2/2 for both, differing at x^3; cb: (dt/eps)(1 - x/2) for both, differing
    /// at x^2), so both are second order in dt and a weakly lossy medium is unchanged. cb is
    /// written as (dt/eps) (-expm1(-x) / x), which has no cancellation for small x and is
    /// exactly dt/eps at sigma = 0, so lossless materials keep their coefficients bit for bit.
    ///
    /// A dispersive material takes the trapezoidal form of [`AdeMaterial`] instead, which
    /// folds the poles' instantaneous response into (ca, cb) and treats its conductivity
    /// trapezoidally too: the poles' update is trapezoidal, and mixing in the exponential form
    /// would make the conductivity's share of the implicit solve first order.
    pub fn coefficients(&self, dt: f64) -> Vec<UpdateCoefficients> {
        self.materials
            .iter()
            .map(|m| {
                if m.pec {
                    return UpdateCoefficients { ca: 0.0, cb: 0.0 };
                }
                if !m.series.is_empty() {
                    // The curl pass only adds cb curl H; the dispersive pass takes that
                    // increment apart into each part's (`DispersiveOp::series`).
                    return UpdateCoefficients {
                        ca: 1.0,
                        cb: series_cb(m, dt),
                    };
                }
                if m.is_dispersive() {
                    let a = AdeMaterial::new(m.epsilon, m.conductivity, &m.poles, dt);
                    return UpdateCoefficients { ca: a.ca, cb: a.cb };
                }
                exponential(EPS0 * m.epsilon, m.conductivity, dt)
            })
            .collect()
    }

    /// H-update coefficients for every material at time step `dt`:
    /// `H <- ca H - cb (curl E + M)` with ca = exp(-x), cb = (dt / mu)(-expm1(-x) / x),
    /// x = sigma_m dt / mu, the exponential form of the E update for the magnetic loss. For a
    /// non-magnetic material (a PEC included: its H is not held) this is exactly (1, dt/mu0).
    pub fn magnetic_coefficients(&self, dt: f64) -> Vec<UpdateCoefficients> {
        self.materials
            .iter()
            .map(|m| exponential(MU0 * m.mu, m.magnetic_conductivity, dt))
            .collect()
    }

    /// True when some material changes the H update.
    pub fn any_magnetic(&self) -> bool {
        self.materials.iter().any(|m| !m.pec && m.is_magnetic())
    }

    /// True when some material has poles.
    pub fn any_dispersive(&self) -> bool {
        self.materials.iter().any(|m| !m.pec && m.is_dispersive())
    }
}

/// The curl pass's gain for a series mixture: the weighted mean of its parts' cb, so that the
/// increment it leaves is what the mixture's instantaneous response would add.
pub fn series_cb(m: &Material, dt: f64) -> f64 {
    m.series
        .iter()
        .map(|(part, w)| w * AdeMaterial::new(part.epsilon, part.conductivity, &part.poles, dt).cb)
        .sum()
}

/// The exponential-differencing update of `perm dF/dt = -sigma F + curl` over one step (see
/// [`MaterialTable::coefficients`]); exactly (1, dt/perm) without loss.
fn exponential(perm: f64, sigma: f64, dt: f64) -> UpdateCoefficients {
    let x = sigma * dt / perm;
    if x == 0.0 {
        return UpdateCoefficients {
            ca: 1.0,
            cb: dt / perm,
        };
    }
    UpdateCoefficients {
        ca: (-x).exp(),
        cb: (dt / perm) * (-(-x).exp_m1() / x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(sigma: f64, epsilon: f64) -> MaterialTable {
        let mut t = MaterialTable::vacuum();
        t.push(Material::dielectric("m", epsilon, sigma));
        t
    }

    /// Lossless materials keep ca = 1, cb = dt/eps exactly; conductors get 0 < ca <= 1 for any
    /// sigma (the semi-implicit ca reached -1 + 2e-9 at 1e12 S/m); weak loss matches the
    /// semi-implicit form to O(x^2) and cb is free of cancellation for tiny x.
    #[test]
    fn exponential_coefficients_are_bounded_and_consistent() {
        let dt = 1e-12;
        let c = table(0.0, 2.0).coefficients(dt)[1];
        assert_eq!(c.ca, 1.0);
        assert_eq!(c.cb, dt / (EPS0 * 2.0));
        for sigma in [1e-12, 1e-3, 1.0, 1e3, 1e6, 1e9, 1e12, 1e20] {
            let c = table(sigma, 1.0).coefficients(dt)[1];
            let x = sigma * dt / EPS0;
            // exp(-x) underflows to 0 only beyond x = 745.
            assert!(c.ca > 0.0 || x > 700.0, "{sigma}: ca = {}", c.ca);
            assert!((0.0..=1.0).contains(&c.ca) && c.cb > 0.0 && c.cb <= dt / EPS0);
            let s = x / 2.0;
            let semi = ((1.0 - s) / (1.0 + s), (dt / EPS0) / (1.0 + s));
            if x < 1e-2 {
                // Differences are x^3/12 in ca and x^2/12 in cb (relative): 1e-7 at x = 1e-2,
                // far below the first-order error (x) an inconsistent form would show.
                assert!((c.ca - semi.0).abs() <= x * x * x / 10.0 + 1e-16, "{sigma}");
                assert!(
                    (c.cb / semi.1 - 1.0).abs() <= x * x / 10.0 + 1e-15,
                    "{sigma}"
                );
            }
        }
        // Far from cancellation: at x = 1e-12, cb = (dt/eps)(1 - 5e-13) to the last digits.
        let x = 1e-12;
        let c = table(x * EPS0 / dt, 1.0).coefficients(dt)[1];
        assert!((c.cb / (dt / EPS0) - (1.0 - x / 2.0)).abs() < 1e-15);
    }
}
